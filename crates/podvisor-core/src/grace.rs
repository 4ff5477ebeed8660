//! The time a pod's containers get between the stop signal and the kill: whole seconds,
//! never zero. The API lets a deletion ask for zero ("now"); a container is still given
//! one second, as the kubelet gives it, so "unset" is never spelled as zero.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct GracePeriod(i64);

impl GracePeriod {
    /// What a pod gets when its spec does not say (the API server's default).
    pub const DEFAULT: GracePeriod = GracePeriod(30);
    /// The least a container is given, even when "now" was asked.
    pub const MIN: GracePeriod = GracePeriod(1);
    /// A year: beyond it, the runtime's conversion to nanoseconds overflows and a stop
    /// would become an immediate kill (validation refuses more).
    pub(crate) const MAX_SECONDS: i64 = 365 * 24 * 3600;

    /// `seconds`, raised to one second and capped at a year.
    pub fn from_seconds(seconds: i64) -> Self {
        Self(seconds.clamp(Self::MIN.0, Self::MAX_SECONDS))
    }

    pub fn seconds(self) -> i64 {
        self.0
    }

    pub fn as_duration(self) -> Duration {
        Duration::from_secs(self.0.unsigned_abs())
    }

    /// The shorter of the two: a grace period only ever shrinks.
    pub fn tightened(self, candidate: GracePeriod) -> GracePeriod {
        self.min(candidate)
    }
}

impl fmt::Display for GracePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_becomes_one_second_and_absurd_values_a_year() {
        assert_eq!(GracePeriod::from_seconds(0).seconds(), 1);
        assert_eq!(GracePeriod::from_seconds(-5).seconds(), 1);
        assert_eq!(GracePeriod::from_seconds(15).seconds(), 15);
        assert_eq!(
            GracePeriod::from_seconds(i64::MAX).seconds(),
            GracePeriod::MAX_SECONDS
        );
        let g = GracePeriod::from_seconds(20);
        assert_eq!(g.tightened(GracePeriod::from_seconds(5)).seconds(), 5);
        assert_eq!(g.tightened(GracePeriod::from_seconds(60)).seconds(), 20);
        assert_eq!(g.as_duration(), Duration::from_secs(20));
    }
}
