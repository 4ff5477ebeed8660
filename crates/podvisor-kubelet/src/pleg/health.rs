//! PLEG health, readable from outside the actor (the `/healthz` check) and surviving its
//! restarts: healthy once a relist succeeded and the last one is recent enough.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

// tokio's clock, so tests on paused time can age the last relist.
use tokio::time::Instant;

/// Why the PLEG is not healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unhealthy {
    #[error("PLEG has not completed a relist yet")]
    NeverRelisted,
    #[error("PLEG last relisted {:.0}s ago; threshold {:.0}s", .ago.as_secs_f64(), .threshold.as_secs_f64())]
    Stale { ago: Duration, threshold: Duration },
}

pub struct PlegHealth {
    base: Instant,
    /// Nanoseconds after `base` of the last successful relist; 0 = never.
    last_ok_ns: AtomicU64,
    threshold_ns: AtomicU64,
}

impl PlegHealth {
    pub fn new(threshold: Duration) -> Self {
        Self {
            base: Instant::now(),
            last_ok_ns: AtomicU64::new(0),
            threshold_ns: AtomicU64::new(threshold.as_nanos() as u64),
        }
    }

    pub(crate) fn relisted(&self) {
        self.relisted_at(Instant::now());
    }

    pub(crate) fn relisted_at(&self, at: Instant) {
        let ns = at.saturating_duration_since(self.base).as_nanos() as u64;
        self.last_ok_ns.fetch_max(ns.max(1), Relaxed);
    }

    /// Evented mode relists rarely: the threshold follows.
    pub(crate) fn set_threshold(&self, threshold: Duration) {
        self.threshold_ns
            .store(threshold.as_nanos() as u64, Relaxed);
    }

    pub(crate) fn threshold(&self) -> Duration {
        Duration::from_nanos(self.threshold_ns.load(Relaxed))
    }

    pub fn check(&self) -> Result<(), Unhealthy> {
        self.check_at(Instant::now())
    }

    pub(crate) fn check_at(&self, now: Instant) -> Result<(), Unhealthy> {
        let last = self.last_ok_ns.load(Relaxed);
        if last == 0 {
            return Err(Unhealthy::NeverRelisted);
        }
        let ago = now
            .saturating_duration_since(self.base)
            .saturating_sub(Duration::from_nanos(last));
        let threshold = self.threshold();
        if ago > threshold {
            return Err(Unhealthy::Stale { ago, threshold });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unhealthy_before_the_first_relist_and_after_the_threshold() {
        let h = PlegHealth::new(Duration::from_secs(180));
        let t0 = Instant::now();
        assert_eq!(h.check_at(t0), Err(Unhealthy::NeverRelisted));
        h.relisted_at(t0);
        assert!(h.check_at(t0 + Duration::from_secs(180)).is_ok());
        let err = h.check_at(t0 + Duration::from_secs(181)).unwrap_err();
        assert!(
            err.to_string().contains("181s ago; threshold 180s"),
            "{err}"
        );
        h.relisted_at(t0 + Duration::from_secs(200));
        assert!(h.check_at(t0 + Duration::from_secs(201)).is_ok());
        // An older relist never moves the mark back.
        h.relisted_at(t0);
        assert!(h.check_at(t0 + Duration::from_secs(300)).is_ok());
    }
}
