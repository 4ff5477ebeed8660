//! Durations as the file writes them: "500ms", "1s", "2m", "1h".

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?}: expected a number and a unit, like \"500ms\" or \"2s\"")]
    Form(String),
    #[error("invalid duration {0:?}: the unit must be ms, s, m or h")]
    Unit(String),
    #[error("invalid duration {0:?}: it must be positive")]
    NotPositive(String),
    /// Every duration here is a period or a timeout; a day is already absurd, and far
    /// larger values would overflow the timers that add them to the current instant.
    #[error("invalid duration {0:?}: it must be at most 24h")]
    TooLong(String),
}

pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().map_err(|_| DurationError::Form(s.into()))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(DurationError::Unit(s.into())),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(DurationError::NotPositive(s.into()));
    }
    if secs > 86_400.0 {
        return Err(DurationError::TooLong(s.into()));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    parse_duration(&s).map_err(serde::de::Error::custom)
}

/// An optional duration: absent, or as [`duration`].
pub(super) fn optional_duration<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}
