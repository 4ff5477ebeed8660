//! One probe of one container (the kubelet's probe worker, as plain data): which instance
//! of the container it probes, its consecutive results against the thresholds, its
//! verdict, and whether it holds (a liveness failure waits for the next instance; a
//! startup probe that decided stops).

use tokio::time::Instant;

use crate::spec::{ProbeKind, ProbeSpec};

/// What one probe run changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The thresholds were not reached, or the verdict stands.
    Unchanged,
    /// The verdict is now this.
    Changed(bool),
}

#[derive(Debug)]
pub(crate) struct Worker {
    pub spec: ProbeSpec,
    /// The container instance probed, and whether it runs.
    pub instance: Option<String>,
    pub running: bool,
    /// The verdict on that instance once a threshold was reached; `None` before (the
    /// initial value: ready = no, started = no, alive = yes).
    pub verdict: Option<bool>,
    last: Option<bool>,
    run: u32,
    /// No more probes of this instance.
    pub held: bool,
    /// A run is under way.
    pub in_flight: bool,
    /// When the next run was due (for lateness and the cadence).
    pub due: Option<Instant>,
}

impl Worker {
    pub(crate) fn new(spec: ProbeSpec) -> Self {
        Self {
            spec,
            instance: None,
            running: false,
            verdict: None,
            last: None,
            run: 0,
            held: false,
            in_flight: false,
            due: None,
        }
    }

    /// The runtime shows instance `id` (running or not); whether it is a new instance,
    /// whose probing starts over.
    pub(crate) fn observe(&mut self, id: &str, running: bool) -> bool {
        self.running = running;
        if self.instance.as_deref() == Some(id) {
            return false;
        }
        self.instance = Some(id.to_string());
        self.verdict = None;
        self.last = None;
        self.run = 0;
        self.held = false;
        self.in_flight = false;
        self.due = None;
        true
    }

    /// Counts one run's result (`None`: it could not be run, which counts for nothing).
    pub(crate) fn record(&mut self, passed: Option<bool>) -> Verdict {
        let Some(p) = passed else {
            return Verdict::Unchanged;
        };
        if self.last == Some(p) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(p);
            self.run = 1;
        }
        let threshold = if p {
            self.spec.success_threshold
        } else {
            self.spec.failure_threshold
        };
        if self.run < threshold {
            return Verdict::Unchanged;
        }
        // A failed liveness probe leads to a kill: nothing more to ask this instance. A
        // startup probe that decided has done its work either way.
        if (self.spec.kind == ProbeKind::Liveness && !p) || self.spec.kind == ProbeKind::Startup {
            self.held = true;
            self.run = 0;
        }
        if self.verdict == Some(p) {
            return Verdict::Unchanged;
        }
        self.verdict = Some(p);
        Verdict::Changed(p)
    }

    /// Whether this probe may run now: its instance runs and it does not hold.
    pub(crate) fn active(&self) -> bool {
        self.instance.is_some() && self.running && !self.held
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::action::Action;

    fn worker(kind: ProbeKind, success: u32, failure: u32) -> Worker {
        Worker::new(ProbeSpec {
            kind,
            action: Action::Exec(vec!["true".into()]),
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            success_threshold: success,
            failure_threshold: failure,
            grace_seconds: None,
        })
    }

    #[test]
    fn thresholds_count_consecutive_results_and_report_changes_once() {
        let mut w = worker(ProbeKind::Readiness, 2, 3);
        assert!(w.observe("c1", true));
        assert!(!w.observe("c1", true));
        assert_eq!(w.record(Some(true)), Verdict::Unchanged);
        assert_eq!(w.record(Some(true)), Verdict::Changed(true));
        assert_eq!(w.record(Some(true)), Verdict::Unchanged);
        // Failures broken by a success start counting again; errors count for nothing.
        for r in [
            Some(false),
            Some(false),
            Some(true),
            Some(false),
            None,
            Some(false),
        ] {
            assert_eq!(w.record(r), Verdict::Unchanged);
        }
        assert_eq!(w.record(Some(false)), Verdict::Changed(false));
        assert!(!w.held, "readiness never holds");
        // A new instance starts over: no verdict, counts reset.
        assert!(w.observe("c2", true));
        assert_eq!(w.verdict, None);
        assert_eq!(w.record(Some(true)), Verdict::Unchanged);
    }

    #[test]
    fn a_failed_liveness_probe_and_a_decided_startup_probe_hold() {
        let mut w = worker(ProbeKind::Liveness, 1, 2);
        w.observe("c1", true);
        assert_eq!(w.record(Some(true)), Verdict::Changed(true));
        assert!(w.active());
        w.record(Some(false));
        assert_eq!(w.record(Some(false)), Verdict::Changed(false));
        assert!(w.held && !w.active());
        w.observe("c2", true);
        assert!(w.active(), "the next instance is probed again");

        let mut s = worker(ProbeKind::Startup, 1, 3);
        s.observe("c1", true);
        assert_eq!(s.record(Some(true)), Verdict::Changed(true));
        assert!(s.held);
        let mut s = worker(ProbeKind::Startup, 1, 1);
        s.observe("c1", false);
        assert!(!s.active(), "an exited instance is not probed");
    }
}
