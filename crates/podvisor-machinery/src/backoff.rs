//! How long to wait before trying a failed call again: exponential, with jitter, as
//! kube-runtime's watcher backs off (`DefaultBackoff`: from 0.8 s, doubling, to 30 s), so
//! many nodes retrying against a recovering apiserver do not do it in step, and one that
//! cannot reach it does not log a warning every second.

use std::time::Duration;

/// The first wait, and the longest.
pub const INITIAL: Duration = Duration::from_millis(800);
pub const MAX: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
    /// Failures since the last success.
    pub failures: u32,
    state: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(INITIAL, MAX)
    }
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        Backoff {
            initial,
            max,
            next: initial,
            failures: 0,
            state: h.finish() | 1,
        }
    }

    /// The wait after one more failure: between half and all of the current step, which
    /// then doubles up to the longest.
    pub fn fail(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let half = step / 2;
        half + half.mul_f64(self.unit())
    }

    /// A success: the next failure waits the first step again.
    pub fn reset(&mut self) {
        self.next = self.initial;
        self.failures = 0;
    }

    /// Whether this failure is worth a warning: the first of a streak, then one in ten
    /// (the rest are debug lines).
    pub fn loud(&self) -> bool {
        self.failures <= 1 || self.failures.is_multiple_of(10)
    }

    /// A pseudo-random number in [0, 1) (xorshift).
    fn unit(&mut self) -> f64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_longest_with_jitter_and_start_over_after_a_success() {
        let mut b = Backoff::default();
        let waits: Vec<Duration> = (0..10).map(|_| b.fail()).collect();
        let mut step = INITIAL;
        for w in &waits {
            assert!(*w >= step / 2 && *w <= step, "{w:?} for a step of {step:?}");
            step = (step * 2).min(MAX);
        }
        assert!(waits[9] >= MAX / 2);
        assert!(
            b.loud()
                && !{
                    b.fail();
                    b.loud()
                }
        );
        b.reset();
        assert!(b.fail() <= INITIAL);
        let (mut x, mut y) = (Backoff::default(), Backoff::default());
        let differ = (0..8).any(|_| x.fail() != y.fail());
        assert!(differ, "two backoffs do not retry in step");
    }
}
