//! A controller's work queue, with client-go's semantics, as a plain struct the actor owns:
//!
//! - keys, not events: a key added while it waits is not added twice (`dirty`);
//! - a key is never handed out twice at once: added while it is being processed, it waits
//!   until [`WorkQueue::done`] and is handed out once more then (`processing`);
//! - `add_after`: a key due later, in one delay queue (a second call only moves it earlier);
//! - `add_rate_limited`: client-go's default controller rate limiter, the larger of a
//!   per-key exponential backoff (5 ms doubling to 1,000 s, reset by `forget`) and an
//!   overall token bucket (10 per second, bursts of 100).
//!
//! The actor drives it: delayed keys come out of [`WorkQueue::delayed`] (polled with
//! `podvisor_actors::due::drive`) and go back in with [`WorkQueue::add`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use podvisor_actors::due::DueQueue;
use tokio::time::Instant;

/// The per-key backoff: `BASE · 2^failures`, at most `MAX`.
pub const BASE: Duration = Duration::from_millis(5);
pub const MAX: Duration = Duration::from_secs(1000);
/// The overall bucket: tokens per second, and the burst.
pub(crate) const QPS: f64 = 10.0;
pub const BURST: f64 = 100.0;

/// client-go's token bucket, taking reservations: a key that finds no token is due when
/// one will have accrued (tokens go negative), so a storm of failures spreads out.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * QPS).min(BURST);
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / QPS)
        }
    }
}

pub struct WorkQueue<K> {
    queue: VecDeque<K>,
    dirty: HashSet<K>,
    processing: HashSet<K>,
    delayed: DueQueue<K>,
    failures: HashMap<K, u32>,
    bucket: Bucket,
}

impl<K: Clone + Eq + Hash> Default for WorkQueue<K> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            delayed: DueQueue::new(),
            failures: HashMap::new(),
            bucket: Bucket {
                tokens: BURST,
                at: Instant::now(),
            },
        }
    }
}

impl<K: Clone + Eq + Hash> WorkQueue<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// `key` needs work. Whether it was queued now (not already waiting).
    pub fn add(&mut self, key: K) -> bool {
        if !self.dirty.insert(key.clone()) {
            return false;
        }
        if self.processing.contains(&key) {
            return false;
        }
        self.queue.push_back(key);
        true
    }

    /// The next key to work on; it is processing until `done`.
    pub fn get(&mut self) -> Option<K> {
        let key = self.queue.pop_front()?;
        self.dirty.remove(&key);
        self.processing.insert(key.clone());
        Some(key)
    }

    /// Work on `key` finished: if it was added meanwhile, it is queued again.
    pub fn done(&mut self, key: &K) {
        self.processing.remove(key);
        if self.dirty.contains(key) {
            self.queue.push_back(key.clone());
        }
    }

    /// `key` is due after `delay` (at once when zero); an earlier due time stands.
    pub fn add_after(&mut self, key: K, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
        } else {
            self.delayed.schedule_earliest(key, Instant::now() + delay);
        }
    }

    /// The delay before `key`'s next try: the larger of its own backoff and the bucket's.
    pub fn when(&mut self, key: &K) -> Duration {
        let n = self.failures.entry(key.clone()).or_insert(0);
        let own = BASE
            .checked_mul(2u32.saturating_pow(*n))
            .map_or(MAX, |d| d.min(MAX));
        *n = n.saturating_add(1);
        own.max(self.bucket.reserve(Instant::now()))
    }

    /// `key` failed: try it again after its backoff. Answers the delay.
    pub fn add_rate_limited(&mut self, key: K) -> Duration {
        let delay = self.when(&key);
        self.add_after(key, delay);
        delay
    }

    /// `key` succeeded: its backoff starts over.
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// How many times in a row `key` has been retried.
    #[cfg(test)]
    pub(crate) fn requeues(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// The keys due later, for `podvisor_actors::due::drive`.
    pub fn delayed(&mut self) -> &mut DueQueue<K> {
        &mut self.delayed
    }

    /// Keys waiting to be handed out (not those due later or processing).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn processing(&self) -> usize {
        self.processing.len()
    }

    pub fn later(&self) -> usize {
        self.delayed.len()
    }

    /// Keys that failed and wait for their retry.
    pub fn retrying(&self) -> usize {
        self.failures.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_queued_once_and_never_handed_out_twice_at_once() {
        let mut q = WorkQueue::new();
        assert!(q.add("a"));
        assert!(!q.add("a"), "already waiting");
        q.add("b");
        assert_eq!(q.get(), Some("a"));
        assert!(!q.add("a"), "processing: marked, not queued");
        assert_eq!(q.get(), Some("b"));
        assert_eq!(q.get(), None, "a is not handed out while processing");
        q.done(&"a");
        assert_eq!(q.get(), Some("a"), "once more after done");
        q.done(&"a");
        q.done(&"b");
        assert_eq!(q.get(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_to_a_cap_and_forget_resets() {
        let mut q: WorkQueue<u32> = WorkQueue::new();
        let delays: Vec<Duration> = (0..5).map(|_| q.when(&1)).collect();
        let ms: Vec<u128> = delays.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [5, 10, 20, 40, 80]);
        assert_eq!(q.requeues(&1), 5);
        for _ in 0..40 {
            q.when(&1);
        }
        assert_eq!(q.when(&1), MAX, "capped at 1,000 s");
        q.forget(&1);
        assert_eq!(q.when(&1), BASE);
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_spreads_a_storm_of_failures() {
        let mut q: WorkQueue<u32> = WorkQueue::new();
        // 100 keys fail once: the burst covers them at their own 5 ms.
        for k in 0..100 {
            assert_eq!(q.when(&k), BASE);
        }
        // The next ones wait for tokens: 0.1 s apart.
        assert_eq!(q.when(&100).as_millis(), 100);
        assert_eq!(q.when(&101).as_millis(), 200);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(q.when(&102), BASE, "refilled");
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_keys_come_due_and_only_move_earlier() {
        let mut q = WorkQueue::new();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(30));
        q.add_after("b", Duration::from_secs(5));
        assert_eq!(q.later(), 2);
        let t0 = Instant::now();
        let mut out = Vec::new();
        while out.len() < 2 {
            let (k, _) = std::future::poll_fn(|cx| q.delayed().poll_due(cx)).await;
            out.push((k, t0.elapsed().as_secs()));
        }
        assert_eq!(out, [("b", 5), ("a", 10)]);
    }
}
