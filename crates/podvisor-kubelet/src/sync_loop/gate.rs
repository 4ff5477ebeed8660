//! Which housekeeping passes do the costly parts. The kubelet lists the runtime and walks
//! the pod directories and the cgroup tree at every pass (2 s); with 100 idle pods those
//! were a third of the node's CPU. What they find only changes when the pods change, so a
//! part runs when the set it depends on differs from the last run's, when it is forced,
//! and at least every `every` for what comes from elsewhere (a runtime pod nobody asked
//! for, a directory a sweep could not remove, a cgroup too young to go):
//!
//! - the runtime listing (orphans, and which pods run): when the desired pods changed,
//!   while removed pods wait to be forgotten, after a listing failed, every `LIST_EVERY`;
//! - the sweep of directories and cgroups: when the pods worth keeping changed (a pod
//!   forgotten, a runtime pod gone), when the pass forgets a pod (one made and removed
//!   between two passes never was in a kept set), every `SWEEP_EVERY`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use podvisor_core::PodUid;

/// The longest housekeeping goes without listing the runtime (the PLEG's safety relist).
pub(crate) const LIST_EVERY: Duration = Duration::from_secs(10);
/// The longest housekeeping goes without sweeping.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(30);

pub(crate) struct Gate {
    every: Duration,
    /// The set of the last run, and when it began.
    last: Option<(HashSet<PodUid>, Instant)>,
}

impl Gate {
    pub(crate) fn new(every: Duration) -> Self {
        Self { every, last: None }
    }

    /// Whether the part runs in the pass at `now` over `set` (always if `force`); if it
    /// does, it is remembered as the last run.
    pub(crate) fn due(&mut self, set: &HashSet<PodUid>, force: bool, now: Instant) -> bool {
        let due = match &self.last {
            None => true,
            Some((was, at)) => {
                force || was != set || now.saturating_duration_since(*at) >= self.every
            }
        };
        if due {
            self.last = Some((set.clone(), now));
        }
        due
    }

    /// The last run did not do its work (a listing failed): the next pass runs it.
    pub(crate) fn again(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(uids: &[&str]) -> HashSet<PodUid> {
        uids.iter().map(|u| PodUid::from(*u)).collect()
    }

    #[test]
    fn the_first_pass_runs_and_an_unchanged_one_does_not() {
        let mut gate = Gate::new(SWEEP_EVERY);
        let t0 = Instant::now();
        assert!(gate.due(&set(&["a", "b"]), false, t0));
        assert!(!gate.due(&set(&["b", "a"]), false, t0 + Duration::from_secs(2)));
        assert!(!gate.due(&set(&["a", "b"]), false, t0 + Duration::from_secs(28)));
    }

    #[test]
    fn a_changed_set_or_a_forced_pass_runs_at_once() {
        let mut gate = Gate::new(SWEEP_EVERY);
        let t0 = Instant::now();
        assert!(gate.due(&set(&["a", "b"]), false, t0));
        let t = t0 + Duration::from_secs(2);
        assert!(gate.due(&set(&["a"]), false, t), "b gone");
        assert!(gate.due(&set(&["a", "c"]), false, t), "c came");
        assert!(!gate.due(&set(&["a", "c"]), false, t));
        assert!(gate.due(&set(&["a", "c"]), true, t), "forced");
    }

    #[test]
    fn a_run_comes_at_least_every_period() {
        let mut gate = Gate::new(LIST_EVERY);
        let t0 = Instant::now();
        let keep = set(&["a"]);
        assert!(gate.due(&keep, false, t0));
        assert!(!gate.due(&keep, false, t0 + LIST_EVERY - Duration::from_millis(1)));
        assert!(gate.due(&keep, false, t0 + LIST_EVERY));
        assert!(!gate.due(&keep, false, t0 + LIST_EVERY + Duration::from_secs(2)));
    }

    #[test]
    fn after_a_failed_run_the_next_pass_runs() {
        let mut gate = Gate::new(LIST_EVERY);
        let t0 = Instant::now();
        assert!(gate.due(&set(&["a"]), false, t0));
        gate.again();
        assert!(gate.due(&set(&["a"]), false, t0 + Duration::from_secs(2)));
        assert!(!gate.due(&set(&["a"]), false, t0 + Duration::from_secs(4)));
    }
}
