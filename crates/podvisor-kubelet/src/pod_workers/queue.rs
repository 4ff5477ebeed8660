//! Pods due for another sync: the periodic resync after a success, the backoff after a
//! failure. The sync loop drains what is due on its tick.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[derive(Default)]
pub struct WorkQueue {
    due: HashMap<String, Instant>,
}

impl WorkQueue {
    /// Schedules `uid` at `now + after`, replacing any earlier schedule for it.
    pub fn enqueue(&mut self, uid: &str, now: Instant, after: Duration) {
        self.due.insert(uid.to_string(), now + after);
    }

    /// Removes and returns every pod whose time has come, soonest first.
    pub fn drain_due(&mut self, now: Instant) -> Vec<String> {
        let mut ready: Vec<(Instant, String)> = Vec::new();
        self.due.retain(|uid, at| {
            if *at <= now {
                ready.push((*at, uid.clone()));
                false
            } else {
                true
            }
        });
        ready.sort();
        ready.into_iter().map(|(_, uid)| uid).collect()
    }

    pub fn forget(&mut self, uid: &str) {
        self.due.remove(uid);
    }

    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drains_only_what_is_due_in_order_and_rescheduling_replaces() {
        let mut q = WorkQueue::default();
        let t0 = Instant::now();
        q.enqueue("a", t0, Duration::from_secs(10));
        q.enqueue("b", t0, Duration::from_secs(2));
        q.enqueue("c", t0, Duration::from_secs(5));
        q.enqueue("a", t0, Duration::from_secs(1)); // backoff replaces the resync
        assert_eq!(q.drain_due(t0), Vec::<String>::new());
        assert_eq!(q.drain_due(t0 + Duration::from_secs(5)), ["a", "b", "c"]);
        assert!(q.is_empty());
        q.enqueue("d", t0, Duration::ZERO);
        q.forget("d");
        assert!(q.drain_due(t0 + Duration::from_secs(60)).is_empty());
    }
}
