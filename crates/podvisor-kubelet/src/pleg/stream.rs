//! The evented PLEG's bookkeeping of its event stream, apart from the actor so its rules
//! are tested without one.
//!
//! Every stream attempt gets a generation. A stream's failure is counted once, whatever
//! form it takes (the open call failing, an error item, the stream ending, or an error
//! followed by the end), and ends that generation: whatever the old stream still yields
//! is stale. Without this, one broken stream counted twice and opened two replacements,
//! and every later event arrived twice.

use std::time::Duration;

use podvisor_cri::CriError;

/// How long to wait before opening the stream again after the first failure; it doubles
/// with each failure in a row, so the default five attempts span about 15 s: a runtime
/// restart (a service manager restarting containerd with many shims takes seconds) is
/// ridden out without leaving evented mode.
pub(crate) const RETRY_DELAY: Duration = Duration::from_millis(500);

/// The wait before attempt `attempt + 1`, after `attempt` failures in a row.
pub(crate) fn retry_delay(attempt: u32) -> Duration {
    RETRY_DELAY * 2u32.saturating_pow(attempt.saturating_sub(1).min(4))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamVerdict {
    /// Open the stream again after `after`; this was failure number `attempt`.
    Retry { attempt: u32, after: Duration },
    /// Stop consuming events for good and relist at the normal period.
    FallBack(String),
    /// About a stream already given up on: nothing to do.
    Stale,
}

#[derive(Debug)]
pub(crate) struct StreamTracker {
    max_failures: u32,
    failures: u32,
    generation: u64,
}

impl StreamTracker {
    pub(crate) fn new(max_failures: u32) -> Self {
        Self {
            max_failures: max_failures.max(1),
            failures: 0,
            generation: 0,
        }
    }

    /// A new attempt; what older attempts report from now on is stale.
    pub(crate) fn opening(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Whether an item from stream `generation` is to be handled.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        generation == self.generation
    }

    /// Stream `generation` is given up on without counting a failure (a probe made while
    /// relisting, which the next probe repeats).
    pub(crate) fn abandon(&mut self, generation: u64) {
        if self.is_current(generation) {
            self.generation += 1;
        }
    }

    /// An event arrived: the stream works, so earlier failures no longer count.
    pub(crate) fn delivered(&mut self, generation: u64) {
        if self.is_current(generation) {
            self.failures = 0;
        }
    }

    /// Stream `generation` failed (`error`: its error, `None` when it just ended).
    pub(crate) fn failed(&mut self, generation: u64, error: Option<&CriError>) -> StreamVerdict {
        if !self.is_current(generation) {
            return StreamVerdict::Stale;
        }
        // Nothing more from this stream counts.
        self.generation += 1;
        if let Some(CriError::Unimplemented { .. }) = error {
            return StreamVerdict::FallBack(
                "the runtime does not implement GetContainerEvents".into(),
            );
        }
        self.failures += 1;
        if self.failures >= self.max_failures {
            let last = error.map_or_else(|| "the event stream ended".into(), |e| e.to_string());
            StreamVerdict::FallBack(format!("{} failed attempts, last: {last}", self.failures))
        } else {
            StreamVerdict::Retry {
                attempt: self.failures,
                after: retry_delay(self.failures),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broken() -> CriError {
        CriError::failed("GetContainerEvents", "connection reset")
    }

    #[test]
    fn an_error_then_the_end_of_one_stream_is_one_failure() {
        let mut t = StreamTracker::new(5);
        let g = t.opening();
        assert_eq!(
            t.failed(g, Some(&broken())),
            StreamVerdict::Retry {
                attempt: 1,
                after: RETRY_DELAY
            }
        );
        assert_eq!(t.failed(g, None), StreamVerdict::Stale);
        assert!(!t.is_current(g), "the old stream's items are ignored");
        let g2 = t.opening();
        assert!(t.is_current(g2));
        assert_eq!(
            t.failed(g2, None),
            StreamVerdict::Retry {
                attempt: 2,
                after: RETRY_DELAY * 2
            }
        );
    }

    #[test]
    fn falls_back_after_the_configured_number_of_failures_in_a_row() {
        let mut t = StreamTracker::new(3);
        for attempt in 1..3 {
            let g = t.opening();
            assert!(
                matches!(t.failed(g, Some(&broken())), StreamVerdict::Retry { attempt: a, .. } if a == attempt)
            );
        }
        let g = t.opening();
        match t.failed(g, Some(&broken())) {
            StreamVerdict::FallBack(why) => {
                assert!(why.starts_with("3 failed attempts"), "{why}");
                assert!(why.contains("connection reset"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_wait_doubles_per_failure_up_to_eight_seconds() {
        let waits: Vec<_> = (1..=7).map(|a| retry_delay(a).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }

    #[test]
    fn an_event_resets_the_count() {
        let mut t = StreamTracker::new(2);
        let g = t.opening();
        assert!(matches!(t.failed(g, None), StreamVerdict::Retry { .. }));
        let g = t.opening();
        t.delivered(g);
        assert!(matches!(
            t.failed(g, None),
            StreamVerdict::Retry { attempt: 1, .. }
        ));
    }

    #[test]
    fn unimplemented_falls_back_at_once_whether_at_open_or_as_an_item() {
        let unimplemented = CriError::Unimplemented {
            op: "GetContainerEvents",
            message: "not here".into(),
        };
        let mut t = StreamTracker::new(5);
        let g = t.opening();
        assert!(matches!(
            t.failed(g, Some(&unimplemented)),
            StreamVerdict::FallBack(_)
        ));
    }
}
