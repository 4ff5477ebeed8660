//! Expectations (client-go's `UIDTrackingControllerExpectations`): what a controller has
//! asked the store to create and delete for one of its objects and not yet seen come back
//! through its watch. While some are outstanding, its cache is behind its own writes, and a
//! sync that counted pods now would create or delete them twice; so it does not manage
//! replicas until the expectations are met, or have expired (5 minutes: a lost event must
//! not stall it for ever).
//!
//! Deletions are tracked by pod key, so the first sighting of a pod being deleted counts
//! and its final removal does not count again. Counts may go below zero (a create that
//! timed out but happened is observed twice); "met" is "nothing outstanding".

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

pub const TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone)]
struct Expected<P> {
    adds: i64,
    deletes: i64,
    deleting: HashSet<P>,
    since: Instant,
}

/// Per controller key `K`, with pods named by `P`.
#[derive(Debug)]
pub struct Expectations<K, P> {
    by_key: HashMap<K, Expected<P>>,
}

impl<K, P> Default for Expectations<K, P> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
        }
    }
}

impl<K: Clone + Eq + Hash, P: Clone + Eq + Hash> Expectations<K, P> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `key` may manage its pods: nothing outstanding, expired, or never set.
    pub fn satisfied(&self, key: &K) -> bool {
        match self.by_key.get(key) {
            None => true,
            Some(e) => (e.adds <= 0 && e.deletes <= 0) || e.since.elapsed() > TIMEOUT,
        }
    }

    /// `n` creates are about to be sent (replaces what was expected).
    pub fn expect_creations(&mut self, key: K, n: usize) {
        self.set(key, n as i64, HashSet::new());
    }

    /// These pods are about to be deleted (replaces what was expected).
    pub fn expect_deletions(&mut self, key: K, pods: impl IntoIterator<Item = P>) {
        let pods: HashSet<P> = pods.into_iter().collect();
        self.set(key, 0, pods);
    }

    fn set(&mut self, key: K, adds: i64, deleting: HashSet<P>) {
        let deletes = deleting.len() as i64;
        self.by_key.insert(
            key,
            Expected {
                adds,
                deletes,
                deleting,
                since: Instant::now(),
            },
        );
    }

    /// A pod this controller expected to create was seen (or will never be: a failed or
    /// skipped create).
    pub fn creation_observed(&mut self, key: &K) {
        if let Some(e) = self.by_key.get_mut(key) {
            e.adds -= 1;
        }
    }

    /// `pod` was seen being deleted (or its delete failed); counted once per pod.
    pub fn deletion_observed(&mut self, key: &K, pod: &P) {
        if let Some(e) = self.by_key.get_mut(key)
            && e.deleting.remove(pod)
        {
            e.deletes -= 1;
        }
    }

    /// The controller's object is gone: forget it.
    pub fn forget(&mut self, key: &K) {
        self.by_key.remove(key);
    }

    /// Keys with something outstanding (for the debug summary).
    pub fn pending(&self) -> usize {
        self.by_key.keys().filter(|k| !self.satisfied(k)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn creations_are_met_by_observations_or_expire() {
        let mut e: Expectations<&str, &str> = Expectations::new();
        assert!(e.satisfied(&"rs"), "nothing set");
        e.expect_creations("rs", 2);
        assert!(!e.satisfied(&"rs"));
        e.creation_observed(&"rs");
        assert!(!e.satisfied(&"rs"));
        e.creation_observed(&"rs");
        assert!(e.satisfied(&"rs"));
        e.creation_observed(&"rs");
        assert!(e.satisfied(&"rs"), "below zero is still met");
        e.expect_creations("rs", 1);
        assert_eq!(e.pending(), 1);
        tokio::time::advance(TIMEOUT).await;
        assert!(
            !e.satisfied(&"rs"),
            "not yet: strictly more than the timeout"
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            e.satisfied(&"rs"),
            "a lost event does not stall it for ever"
        );
    }

    #[test]
    fn deletions_count_once_per_pod() {
        let mut e: Expectations<&str, &str> = Expectations::new();
        e.expect_deletions("rs", ["a", "b"]);
        e.deletion_observed(&"rs", &"a");
        e.deletion_observed(&"rs", &"a");
        assert!(
            !e.satisfied(&"rs"),
            "the second sighting of a does not count"
        );
        e.deletion_observed(&"rs", &"other");
        assert!(!e.satisfied(&"rs"));
        e.deletion_observed(&"rs", &"b");
        assert!(e.satisfied(&"rs"));
        e.expect_creations("rs", 3);
        e.forget(&"rs");
        assert!(e.satisfied(&"rs"));
    }
}
