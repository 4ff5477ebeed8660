//! Wall-clock times as the API writes them (`metav1.Time`), from nanoseconds since the
//! epoch as CRI reports them or from the system clock.

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Nanoseconds since the epoch; `None` for zero or less (CRI's "not set").
pub fn from_nanos(nanos: i64) -> Option<Time> {
    (nanos > 0)
        .then(|| Timestamp::from_nanosecond(i128::from(nanos)).ok())
        .flatten()
        .map(Time)
}

/// The system clock now, in nanoseconds since the epoch.
pub fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The system clock now, in milliseconds since the epoch.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The system clock now, as the API writes it.
pub fn now() -> Time {
    from_nanos(now_nanos()).unwrap_or(Time(Timestamp::UNIX_EPOCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_times_stay_unset() {
        assert!(from_nanos(0).is_none());
        assert!(from_nanos(-1).is_none());
        let t = from_nanos(1_700_000_000_000_000_000).unwrap();
        assert_eq!(t.0.as_second(), 1_700_000_000);
        assert!(now().0.as_second() > 1_700_000_000);
    }
}
