//! Runs of the scheduler's probes: handing out what is due (within the limit), counting
//! what came back, and what the pod's sync and status need to know.

use std::sync::Arc;

use podvisor_core::{PodUid, SharedPod};
use tokio::time::Instant;

use super::{Effect, Failed, ProbeKey, ProbeResult, Probes, ProbesSummary, Run, Verdicts};
use crate::outcome::Outcome;
use crate::spec::ProbeKind;
use crate::worker::Verdict;

impl Probes {
    /// `key`'s time has come: the run to start, unless it is stale, held back, or over a
    /// limit (then it waits for [`Probes::next_waiting`]).
    pub fn due(&mut self, key: ProbeKey, now: Instant) -> Option<Run> {
        let exec = self.is_exec(&key);
        if !self.free(exec) {
            if exec {
                self.waiting_exec.push_back(key);
            } else {
                self.waiting.push_back(key);
            }
            return None;
        }
        self.start(key, now)
    }

    /// The next run that waited for a free slot, if one is free now.
    pub fn next_waiting(&mut self, now: Instant) -> Option<Run> {
        loop {
            let key = if self.free(false) && !self.waiting.is_empty() {
                self.waiting.pop_front()
            } else if self.free(true) {
                self.waiting_exec.pop_front()
            } else {
                None
            }?;
            if let Some(run) = self.start(key, now) {
                return Some(run);
            }
        }
    }

    fn is_exec(&self, key: &ProbeKey) -> bool {
        self.pods
            .get(&key.uid)
            .and_then(|e| e.workers.get(&(Arc::clone(&key.container), key.kind)))
            .is_some_and(|w| matches!(w.spec.action, crate::action::Action::Exec(_)))
    }

    /// Whether a run (an exec one, when `exec`) may start now.
    fn free(&self, exec: bool) -> bool {
        self.running.len() < self.limits.total && (!exec || self.exec_running < self.limits.exec)
    }

    fn start(&mut self, key: ProbeKey, now: Instant) -> Option<Run> {
        let e = self.pods.get_mut(&key.uid)?;
        if e.gated(&key.container, key.kind) {
            return None;
        }
        let ip = e.ip();
        let w = e.workers.get_mut(&(key.container.clone(), key.kind))?;
        if !w.active() || w.in_flight {
            return None;
        }
        if let Some(due) = w.due {
            self.lateness.record(now.saturating_duration_since(due));
        }
        w.in_flight = true;
        let exec = matches!(w.spec.action, crate::action::Action::Exec(_));
        self.running.insert(key.clone(), exec);
        self.exec_running += usize::from(exec);
        Some(Run {
            action: w.spec.action.clone(),
            container_id: w.instance.clone()?,
            pod_ip: ip,
            timeout: w.spec.timeout,
            key,
        })
    }

    /// A run of `key` against instance `container_id` ended with `outcome`.
    pub fn finish(
        &mut self,
        key: &ProbeKey,
        container_id: &str,
        outcome: Outcome,
        now: Instant,
    ) -> Vec<Effect> {
        if let Some(exec) = self.running.remove(key) {
            self.exec_running -= usize::from(exec);
        }
        self.runs += 1;
        match outcome.passed() {
            Some(false) => self.failures += 1,
            None => self.errors += 1,
            Some(true) => {}
        }
        let Some(e) = self.pods.get_mut(&key.uid) else {
            return Vec::new();
        };
        let pod = e.pod.clone();
        let Some(w) = e.workers.get_mut(&(key.container.clone(), key.kind)) else {
            return Vec::new();
        };
        if w.instance.as_deref() != Some(container_id) {
            return Vec::new(); // an earlier instance's answer
        }
        w.in_flight = false;
        let mut effects = Vec::new();
        if let Some((reason, message)) = event_of(key.kind, &outcome) {
            effects.push(Effect::Event {
                pod,
                reason,
                message,
            });
        }
        let verdict = w.record(outcome.passed());
        if w.active() {
            let period = w.spec.period;
            let next = w.due.map_or(now, |d| d + period).max(now);
            w.due = Some(next);
            self.queue.schedule(key.clone(), next);
        } else {
            w.due = None;
        }
        if let Verdict::Changed(passed) = verdict {
            self.changed(key, container_id, passed, now, &mut effects);
        }
        effects
    }

    /// A verdict changed: who is told, and what it releases.
    fn changed(
        &mut self,
        key: &ProbeKey,
        container_id: &str,
        passed: bool,
        now: Instant,
        effects: &mut Vec<Effect>,
    ) {
        let result = ProbeResult {
            uid: key.uid.clone(),
            container: key.container.to_string(),
            container_id: container_id.to_string(),
            kind: key.kind,
            passed,
        };
        match key.kind {
            ProbeKind::Readiness => effects.push(Effect::Result(result)),
            ProbeKind::Liveness if !passed => effects.push(Effect::Sync(key.uid.clone())),
            ProbeKind::Liveness => {}
            ProbeKind::Startup => {
                effects.push(Effect::Result(result));
                effects.push(Effect::Sync(key.uid.clone()));
                if passed {
                    self.release(key, now);
                }
            }
        }
    }

    /// A startup probe succeeded: the container's other probes begin.
    fn release(&mut self, key: &ProbeKey, now: Instant) {
        let wall = podvisor_core::time::now_nanos();
        let started_at = self
            .pods
            .get(&key.uid)
            .and_then(|e| e.status.as_ref())
            .and_then(|s| s.container(&key.container))
            .map_or(wall, |c| c.started_at);
        for kind in [ProbeKind::Readiness, ProbeKind::Liveness] {
            let k = ProbeKey {
                kind,
                ..key.clone()
            };
            self.schedule_first(k, started_at, now, wall);
        }
    }

    /// What the probes know of pod `uid`'s running instances.
    pub fn verdicts(&self, uid: &PodUid) -> Verdicts {
        let mut v = Verdicts::default();
        let Some(e) = self.pods.get(uid) else {
            return v;
        };
        for ((container, kind), w) in &e.workers {
            let Some(id) = w.instance.clone() else {
                continue;
            };
            match (kind, w.verdict) {
                (ProbeKind::Startup, Some(true)) => {
                    v.started.insert(id);
                }
                (ProbeKind::Startup | ProbeKind::Liveness, Some(false)) if w.running => {
                    let failed = Failed {
                        container: container.to_string(),
                        kind: *kind,
                        grace_seconds: w.spec.grace_seconds,
                    };
                    // Never both for one instance: liveness runs only once startup passed.
                    v.failed.entry(id).or_insert(failed);
                }
                _ => {}
            }
        }
        v
    }

    /// Every readiness and startup verdict held (for a restarted status manager).
    pub fn results(&self) -> Vec<ProbeResult> {
        let mut out = Vec::new();
        for (uid, e) in &self.pods {
            for ((container, kind), w) in &e.workers {
                if let (ProbeKind::Readiness | ProbeKind::Startup, Some(passed), Some(id)) =
                    (kind, w.verdict, &w.instance)
                {
                    out.push(ProbeResult {
                        uid: uid.clone(),
                        container: container.to_string(),
                        container_id: id.clone(),
                        kind: *kind,
                        passed,
                    });
                }
            }
        }
        out
    }

    pub fn summary(&self) -> ProbesSummary {
        ProbesSummary {
            pods: self.pods.len(),
            probes: self.pods.values().map(|e| e.workers.len()).sum(),
            scheduled: self.queue.len(),
            in_flight: self.running.len(),
            exec_in_flight: self.exec_running,
            waiting: self.waiting.len() + self.waiting_exec.len(),
            runs: self.runs,
            failures: self.failures,
            errors: self.errors,
            lateness: self.lateness.snapshot().summary(),
            lateness_histogram: self.lateness.snapshot(),
        }
    }

    /// The pods with probes (for tests and the actor's rebuild).
    pub fn pods(&self) -> impl Iterator<Item = &PodUid> {
        self.pods.keys()
    }

    /// Whether `key` has a run due or under way.
    /// Whether the probe `key` still exists (its pod and container still have it).
    pub fn has_probe(&self, key: &ProbeKey) -> bool {
        self.pods.get(&key.uid).is_some_and(|e| {
            e.workers
                .contains_key(&(Arc::clone(&key.container), key.kind))
        })
    }

    /// The pod of `uid`, as last set.
    pub fn pod(&self, uid: &PodUid) -> Option<&SharedPod> {
        self.pods.get(uid).map(|e| &e.pod)
    }

    pub fn is_scheduled(&self, key: &ProbeKey) -> bool {
        self.queue.contains(key)
            || self
                .pods
                .get(&key.uid)
                .and_then(|e| e.workers.get(&(Arc::clone(&key.container), key.kind)))
                .is_some_and(|w| w.in_flight)
    }
}

/// The event a run's outcome makes, as the kubelet words it.
fn event_of(kind: ProbeKind, outcome: &Outcome) -> Option<(&'static str, String)> {
    match outcome {
        Outcome::Success => None,
        Outcome::Warning(m) => Some(("ProbeWarning", format!("{kind} probe warning: {m}"))),
        Outcome::Failure(m) => Some(("Unhealthy", format!("{kind} probe failed: {m}"))),
        Outcome::Error(m) => Some((
            "Unhealthy",
            format!("{kind} probe errored and resulted in unknown state: {m}"),
        )),
    }
}
