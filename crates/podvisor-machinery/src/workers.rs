//! A controller's workers over its [`WorkQueue`], as client-go's controllers run theirs:
//! at most `limit` syncs at once, one per key; a failed sync tried again after the
//! queue's rate limiter, a good one forgotten (and due again after the delay it asks
//! for); and the counts a controller's summary shows. A plain struct: the actor starts
//! each key [`Workers::start`] hands out and reports its end with [`Workers::finished`],
//! or [`Workers::skip`]s a key whose object is gone.

use std::hash::Hash;
use std::time::Duration;

use podvisor_actors::due::DueQueue;
use serde::Serialize;

use crate::workqueue::WorkQueue;

/// How a sync ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done; due again after this long, if given (a deadline the object's state names).
    Synced(Option<Duration>),
    /// Failed: tried again after the rate limiter's delay.
    Failed,
    /// Not done, and not a failure (it met a newer version than its cache held): tried
    /// again after the rate limiter's delay, not counted as failed.
    Retry,
}

/// The work counts of a controller's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkStats {
    /// Keys waiting for a sync, being synced, due later, and retrying after a failure.
    pub queued: usize,
    pub in_flight: usize,
    pub later: usize,
    pub retrying: usize,
    /// Syncs started, and those that failed.
    pub syncs: u64,
    pub failed_syncs: u64,
}

pub struct Workers<K> {
    queue: WorkQueue<K>,
    limit: usize,
    running: usize,
    syncs: u64,
    failed: u64,
}

impl<K: Clone + Eq + Hash> Workers<K> {
    /// Workers running at most `limit` syncs at once.
    pub fn new(limit: usize) -> Self {
        Self {
            queue: WorkQueue::new(),
            limit,
            running: 0,
            syncs: 0,
            failed: 0,
        }
    }

    /// `key` needs a sync.
    pub fn add(&mut self, key: K) {
        self.queue.add(key);
    }

    /// `key` needs a sync after `delay` (at once when zero).
    pub fn add_after(&mut self, key: K, delay: Duration) {
        self.queue.add_after(key, delay);
    }

    /// The keys due later, for `podvisor_actors::due::drive` (back in with `add`).
    pub fn delayed(&mut self) -> &mut DueQueue<K> {
        self.queue.delayed()
    }

    /// The next key to sync while fewer than `limit` run; it runs until `finished` or
    /// `skip`.
    pub fn start(&mut self) -> Option<K> {
        if self.running >= self.limit {
            return None;
        }
        let key = self.queue.get()?;
        self.running += 1;
        self.syncs += 1;
        Some(key)
    }

    /// `key`'s object is gone: nothing to sync, and nothing to retry.
    pub fn skip(&mut self, key: &K) {
        self.running -= 1;
        self.syncs -= 1;
        self.queue.forget(key);
        self.queue.done(key);
    }

    /// `key`'s sync ended. When it failed, the delay before it is tried again.
    pub fn finished(&mut self, key: &K, outcome: Outcome) -> Option<Duration> {
        self.running -= 1;
        let retry = match outcome {
            Outcome::Failed => {
                self.failed += 1;
                Some(self.queue.add_rate_limited(key.clone()))
            }
            Outcome::Retry => Some(self.queue.add_rate_limited(key.clone())),
            Outcome::Synced(again) => {
                self.queue.forget(key);
                if let Some(after) = again {
                    self.queue.add_after(key.clone(), after);
                }
                None
            }
        };
        self.queue.done(key);
        retry
    }

    pub fn stats(&self) -> WorkStats {
        WorkStats {
            queued: self.queue.len(),
            in_flight: self.queue.processing(),
            later: self.queue.later(),
            retrying: self.queue.retrying(),
            syncs: self.syncs,
            failed_syncs: self.failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(w: &mut Workers<&'static str>) -> Vec<&'static str> {
        std::iter::from_fn(|| w.start()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_waits_like_a_failure_and_is_not_counted_as_one() {
        let mut w = Workers::new(1);
        w.add("a");
        assert_eq!(w.start(), Some("a"));
        let delay = w.finished(&"a", Outcome::Retry);
        assert!(delay.is_some());
        let s = w.stats();
        assert_eq!((s.failed_syncs, s.retrying), (0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_limit_run_and_a_key_runs_once_at_a_time() {
        let mut w = Workers::new(2);
        for k in ["a", "b", "c"] {
            w.add(k);
        }
        assert_eq!(drain(&mut w), ["a", "b"]);
        w.add("a"); // changed while it syncs: once more after, not twice at once
        assert_eq!(w.finished(&"b", Outcome::Synced(None)), None);
        assert_eq!(drain(&mut w), ["c"]);
        assert_eq!(w.finished(&"a", Outcome::Synced(None)), None);
        assert_eq!(drain(&mut w), ["a"]);
        let s = w.stats();
        assert_eq!((s.in_flight, s.queued, s.syncs), (2, 0, 4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_backs_off_and_a_success_forgets_it() {
        let mut w = Workers::new(4);
        w.add("a");
        assert_eq!(drain(&mut w), ["a"]);
        let first = w.finished(&"a", Outcome::Failed).unwrap();
        assert_eq!(w.stats().later, 1, "due again later, not at once");
        assert!(drain(&mut w).is_empty());
        w.add("a");
        assert_eq!(drain(&mut w), ["a"]);
        let second = w.finished(&"a", Outcome::Failed).unwrap();
        assert!(second > first, "{second:?} after {first:?}");
        let s = w.stats();
        assert_eq!((s.retrying, s.failed_syncs), (1, 2));
        w.add("a");
        drain(&mut w);
        w.finished(&"a", Outcome::Synced(Some(Duration::from_secs(5))));
        assert_eq!(w.stats().retrying, 0, "the backoff starts over");
    }

    #[tokio::test(start_paused = true)]
    async fn a_skipped_key_is_not_counted_and_frees_its_worker() {
        let mut w = Workers::new(1);
        w.add("gone");
        w.add("b");
        assert_eq!(drain(&mut w), ["gone"]);
        w.skip(&"gone");
        assert_eq!(drain(&mut w), ["b"]);
        assert_eq!(w.stats().syncs, 1);
    }
}
