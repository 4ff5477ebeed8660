//! The pod workers' decisions (the kubelet's `UpdatePod` and `managePodLoop` rules) as a
//! plain state machine. The dispatcher actor feeds it updates, work reports and due
//! deadlines, and carries out the [`Effect`]s it returns (including the deadlines, which
//! it keeps in its delay queue); tests drive it directly.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use podvisor_core::{PodExt, PodUid, SharedPod};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::lifecycle::Cause;
use super::static_gate::StaticGate;
use super::status::{Delivered, Pending, PodSyncStatus, requested_grace};
use crate::protocol::updates::{
    KillPodOptions, PodWorkerState, RuntimePod, UpdatePodOptions, UpdateType,
};
use crate::protocol::work::{PodWork, WorkKind, WorkResult};

/// What the dispatcher must do after a decision.
#[derive(Debug)]
pub enum Effect {
    /// Hand this work to the pod's worker (creating the worker if needed).
    Deliver(PodWork),
    /// Cancel the pod's sync in flight: newer work is waiting.
    Cancel(PodUid),
    /// The pod's worker has nothing left to do.
    StopWorker(PodUid),
    /// Look at the pod again at this time (a resync, a retry after the backoff), replacing
    /// whatever was scheduled for it.
    Schedule(PodUid, Instant),
    /// Nothing is scheduled for the pod any more.
    Unschedule(PodUid),
}

#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Next sync after a successful one.
    pub resync_interval: Duration,
    /// Next attempt after a failed one.
    pub backoff: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            resync_interval: Duration::from_secs(10),
            backoff: Duration::from_secs(10),
        }
    }
}

#[derive(Default)]
pub struct PodWorkersState {
    pods: HashMap<PodUid, PodSyncStatus>,
    gate: StaticGate,
    timings: Timings,
}

/// Delivery numbers are unique in the process, so a report about work delivered by an
/// earlier dispatcher instance never matches work delivered by this one.
fn next_delivery() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn complete(kill: Option<KillPodOptions>) {
    if let Some(k) = kill {
        k.complete();
    }
}

/// What an update is about: a desired pod, or a runtime-only pod (which can only be
/// killed). `None` for an update that asks nothing.
fn target(
    opts: &mut UpdatePodOptions,
    update_type: UpdateType,
) -> Option<(SharedPod, Option<RuntimePod>)> {
    match (opts.pod.take(), opts.running_pod.take()) {
        (Some(p), _) => Some((p, None)),
        (None, Some(r)) if update_type == UpdateType::Kill => Some((r.stand_in(), Some(r))),
        (None, Some(r)) => {
            debug!(pod_uid = %r.uid(), "update ignored: runtime-only pods can only be killed");
            None
        }
        (None, None) => None,
    }
}

/// Why an update starts the pod's termination, if it does.
fn termination_cause(
    pod: &SharedPod,
    runtime_only: bool,
    update_type: UpdateType,
    kill: Option<&KillPodOptions>,
) -> Option<Cause> {
    if runtime_only {
        Some(Cause::Orphaned)
    } else if pod.is_deleted() {
        Some(Cause::Deleted)
    } else if pod.is_terminal() {
        Some(Cause::Completed)
    } else if update_type == UpdateType::Kill {
        Some(if kill.is_some_and(|k| k.evict) {
            Cause::Evicted
        } else {
            Cause::Killed
        })
    } else {
        None
    }
}

impl PodWorkersState {
    pub fn new(timings: Timings) -> Self {
        Self {
            timings,
            ..Default::default()
        }
    }

    pub fn status(&self, uid: &str) -> Option<&PodSyncStatus> {
        self.pods.get(uid)
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    pub fn uids(&self) -> impl Iterator<Item = &PodUid> {
        self.pods.keys()
    }

    /// A pod seen for the first time in a terminal phase may be done already: whether it is
    /// depends on the cached runtime status, which the caller must look up first.
    pub fn needs_cached_status(&self, opts: &UpdatePodOptions) -> bool {
        opts.pod
            .as_ref()
            .is_some_and(|p| p.is_terminal() && !self.pods.contains_key(p.uid()))
    }

    /// The kubelet's `UpdatePod`. `cached_terminal`: for a pod seen for the first time in
    /// a terminal phase, whether the runtime status cache shows nothing running.
    pub fn update_pod(
        &mut self,
        mut opts: UpdatePodOptions,
        cached_terminal: Option<bool>,
        now: Instant,
    ) -> Vec<Effect> {
        let update_type = opts.update_type.unwrap_or(UpdateType::Sync);
        let mut kill = opts.kill.take();
        let Some((pod, running_pod)) = target(&mut opts, update_type) else {
            complete(kill);
            return Vec::new();
        };
        let runtime_only = running_pod.is_some();
        let uid = pod.uid().clone();
        if !self.pods.contains_key(&uid) {
            if !runtime_only && pod.is_terminal() && cached_terminal == Some(true) {
                // Done before we ever saw it. Not a restart request either: this update is
                // the one that found it done.
                self.pods
                    .insert(uid, PodSyncStatus::done_before_seen(&pod, now));
                complete(kill);
                return Vec::new();
            }
            let status = PodSyncStatus::new(&pod);
            if status.is_static() {
                self.gate.arrive(status.key(), &uid);
            }
            self.pods.insert(uid.clone(), status);
        }
        let status = self.pods.get_mut(&uid).expect("inserted above");
        // Two pods with one UID in quick succession (a static pod edited back and forth):
        // let the first finish, then the sync loop may add the second.
        if status.termination_requested() && update_type == UpdateType::Create {
            status.restart_requested = true;
            complete(kill);
            return Vec::new();
        }
        if status.is_finished() || (runtime_only && status.is_terminated()) {
            // A late runtime-only kill comes from housekeeping's older view.
            complete(kill);
            return Vec::new();
        }
        let became_terminating =
            match termination_cause(&pod, runtime_only, update_type, kill.as_ref()) {
                Some(cause) if !status.termination_requested() => {
                    let grace = requested_grace(&pod, kill.as_ref())
                        .unwrap_or_else(|| pod.spec_grace_period());
                    status.terminate(cause, grace, now);
                    true
                }
                _ => false,
            };
        let mut grace_shortened = false;
        match status.lifecycle.work_kind() {
            Some(WorkKind::Terminating) => {
                if let Some(k) = kill.as_mut() {
                    status.absorb_kill(k);
                }
                if let (false, Some(g)) = (became_terminating, requested_grace(&pod, kill.as_ref()))
                {
                    grace_shortened = status.lifecycle.shrink_grace(g).unwrap_or(false);
                }
            }
            _ => complete(kill.take()),
        }
        let start_time = match (&status.pending, opts.start_time) {
            (Some(p), Some(t)) => Some(p.start_time.map_or(t, |s| s.min(t))),
            (Some(p), None) => p.start_time,
            (None, t) => t,
        };
        status.pending = Some(Pending {
            update_type,
            pod,
            running_pod,
            start_time,
        });
        if status.working {
            return if became_terminating || grace_shortened {
                vec![Effect::Cancel(uid)]
            } else {
                Vec::new()
            };
        }
        self.deliver(&uid, now)
    }

    /// Hands the pod's pending update to its worker, unless it has none, or is a static pod
    /// that must wait for another with the same key.
    fn deliver(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        let Some(update) = status.pending.take() else {
            status.working = false;
            return Vec::new();
        };
        if !status.started && status.is_static() {
            if status.termination_requested() {
                // Never started: nothing ran, so nothing to stop.
                return self.finish(uid, now);
            }
            let key = status.key().clone();
            if !self.gate.allow(&key, uid, &self.pods) {
                let status = self.pods.get_mut(uid).expect("checked above");
                status.pending = Some(update);
                status.working = false;
                return vec![Effect::Schedule(uid.clone(), now + self.timings.backoff)];
            }
        }
        let status = self.pods.get_mut(uid).expect("checked above");
        status.started = true;
        let seq = next_delivery();
        let Some(work) = status.work(&update, seq) else {
            status.working = false;
            return Vec::new();
        };
        status.current = Some(Delivered {
            update,
            seq,
            kind: work.kind,
        });
        status.working = true;
        vec![Effect::Deliver(work)]
    }

    /// A static pod with this key is done: let the next one in line start now rather than
    /// at its next retry.
    fn start_next_static(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(key) = self.pods.get(uid).map(|s| s.key().clone()) else {
            return Vec::new();
        };
        if !self.gate.release(&key, uid) {
            return Vec::new();
        }
        let Some(next) = self.gate.next(&key, &self.pods) else {
            return Vec::new();
        };
        let mut effects = vec![Effect::Unschedule(next.clone())];
        effects.extend(self.deliver(&next, now));
        effects
    }

    /// Whether `seq` is the work the pod's worker is running now (not a late report of
    /// work that was redelivered since).
    pub fn is_current_work(&self, uid: &str, seq: u64) -> bool {
        self.pods
            .get(uid)
            .is_some_and(|s| s.working && s.current.as_ref().is_some_and(|c| c.seq == seq))
    }

    /// A worker reports how the work `seq` ended.
    pub fn work_done(
        &mut self,
        uid: &PodUid,
        seq: u64,
        result: WorkResult,
        now: Instant,
    ) -> Vec<Effect> {
        if !self.is_current_work(uid, seq) {
            return Vec::new(); // a report for work that was redelivered since
        }
        let status = self.pods.get_mut(uid).expect("checked above");
        let kind = status.current.as_ref().map_or(WorkKind::Sync, |c| c.kind);
        status.last_result = Some((kind, result.clone()));
        let resync = Effect::Schedule(uid.clone(), now + self.timings.resync_interval);
        let mut effects = Vec::new();
        match (result, kind) {
            (WorkResult::Cancelled, _) => {}
            (WorkResult::Failed(_), _) => {
                effects.push(Effect::Schedule(uid.clone(), now + self.timings.backoff))
            }
            (WorkResult::Ok(_), WorkKind::Terminated) => return self.finish(uid, now),
            // Not in any config: no terminated sync, garbage collection does the rest.
            (WorkResult::Ok(_), WorkKind::Terminating) if status.is_runtime_only() => {
                return self.finish(uid, now);
            }
            (WorkResult::Ok(_), WorkKind::Terminating) => {
                if let Err(e) = status.lifecycle.stopped(now) {
                    warn!(pod_uid = %uid, error = %e, "pod workers' lifecycle refused a move");
                }
                status.notify_terminated();
                status.repeat_current();
                effects.push(resync);
            }
            (WorkResult::Ok(outcome), WorkKind::Sync) => {
                if outcome.terminal
                    && !status.termination_requested()
                    && let Some(pod) = status.current.as_ref().map(|c| c.update.pod.clone())
                {
                    let grace =
                        requested_grace(&pod, None).unwrap_or_else(|| pod.spec_grace_period());
                    status.terminate(Cause::Completed, grace, now);
                    status.repeat_current();
                }
                effects.push(resync);
            }
        }
        effects.extend(self.deliver(uid, now));
        effects
    }

    fn finish(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if let Err(e) = status.lifecycle.finish(now) {
            warn!(pod_uid = %uid, error = %e, "pod workers' lifecycle refused a move");
        }
        status.working = false;
        status.pending = None;
        status.notify_terminated();
        let key = status.key().clone();
        self.gate.forget_waiting(&key, uid);
        let mut effects = vec![
            Effect::StopWorker(uid.clone()),
            Effect::Unschedule(uid.clone()),
        ];
        effects.extend(self.start_next_static(uid, now));
        effects
    }

    /// The pod's deadline came: a resync after a success, a retry after a failure, a static
    /// pod's next try at its gate. The newest update is delivered again (a pod that is
    /// working now is looked at when its work ends; one that finished needs nothing).
    pub fn resync_due(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if status.working || status.is_finished() {
            return Vec::new();
        }
        status.pending = status.take_resync(now);
        self.deliver(uid, now)
    }

    /// A worker crashed and restarted: the work it was running is lost, so it gets the
    /// newest update again.
    pub fn worker_restarted(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if !status.working {
            return Vec::new();
        }
        status.repeat_current();
        status.working = false;
        self.deliver(uid, now)
    }

    /// Forgets finished pods that are no longer desired (or whose UID was requested again)
    /// and reports every known pod's state.
    pub fn sync_known_pods(
        &mut self,
        desired: &HashSet<PodUid>,
    ) -> (BTreeMap<PodUid, PodWorkerState>, Vec<Effect>) {
        let mut states = BTreeMap::new();
        let mut effects = Vec::new();
        let forget: Vec<PodUid> = self
            .pods
            .iter()
            .filter(|(uid, s)| s.is_finished() && (!desired.contains(*uid) || s.restart_requested))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in forget {
            let Some(s) = self.pods.remove(&uid) else {
                continue;
            };
            let state = if s.restart_requested {
                PodWorkerState::TerminatedAndRecreated
            } else {
                PodWorkerState::Terminated
            };
            states.insert(uid.clone(), state);
            self.gate.release(s.key(), &uid);
            self.gate.forget_waiting(s.key(), &uid);
            effects.push(Effect::StopWorker(uid.clone()));
            effects.push(Effect::Unschedule(uid));
        }
        for (uid, s) in &self.pods {
            let state = if s.is_terminated() {
                PodWorkerState::Terminated
            } else if s.termination_requested() {
                PodWorkerState::Terminating
            } else {
                PodWorkerState::Syncing
            };
            states.insert(uid.clone(), state);
        }
        (states, effects)
    }
}
