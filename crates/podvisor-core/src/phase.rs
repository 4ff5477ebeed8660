//! A pod's phase and restart policy as enums, spelled as the API spells them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `status.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }

    /// Succeeded or Failed: the pod will never run again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown pod phase {0:?}")]
pub struct UnknownPhase(pub String);

impl FromStr for Phase {
    type Err = UnknownPhase;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "Pending" => Phase::Pending,
            "Running" => Phase::Running,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            "Unknown" => Phase::Unknown,
            other => return Err(UnknownPhase(other.to_string())),
        })
    }
}

/// `spec.restartPolicy`; the API's default is `Always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartPolicy {
    #[default]
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    pub(crate) const NAMES: [&'static str; 3] = ["Always", "OnFailure", "Never"];

    /// The policy a field names; `None` for a value the API does not accept.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Always" => Some(Self::Always),
            "OnFailure" => Some(Self::OnFailure),
            "Never" => Some(Self::Never),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip_and_only_two_are_terminal() {
        for p in [
            Phase::Pending,
            Phase::Running,
            Phase::Succeeded,
            Phase::Failed,
            Phase::Unknown,
        ] {
            assert_eq!(p.as_str().parse::<Phase>(), Ok(p));
            assert_eq!(
                p.is_terminal(),
                matches!(p, Phase::Succeeded | Phase::Failed)
            );
        }
        assert!("running".parse::<Phase>().is_err());
        assert_eq!(RestartPolicy::parse("Never"), Some(RestartPolicy::Never));
        assert_eq!(RestartPolicy::parse("never"), None);
    }
}
