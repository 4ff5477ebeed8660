//! What comes back to the pod workers' state: a worker's report on its work, a pod's
//! deadline, a worker's restart, and housekeeping's `SyncKnownPods`.

use std::collections::{BTreeMap, HashSet};

use podvisor_core::{PodExt, PodUid, SharedPod};
use tokio::time::Instant;
use tracing::warn;

use super::lifecycle::Cause;
use super::state::{Effect, PodWorkersState};
use super::status::requested_grace;
use crate::protocol::updates::PodWorkerState;
use crate::protocol::work::{WorkKind, WorkResult};

impl PodWorkersState {
    /// A worker reports how the work `seq` ended.
    pub(crate) fn work_done(
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
        let resync_at = now + self.timings.resync_after(uid, seq);
        let resync = Effect::Schedule(uid.clone(), resync_at);
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
                if let Err(e) = status.lifecycle.stopped() {
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
                let at = outcome
                    .recheck_in
                    .map_or(resync_at, |r| resync_at.min(now + r));
                effects.push(Effect::Schedule(uid.clone(), at));
            }
        }
        effects.extend(self.deliver(uid, now));
        effects
    }

    pub(super) fn finish(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if let Err(e) = status.lifecycle.finish() {
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
    pub(crate) fn resync_due(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
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
    /// The newest spec of pod `uid` the dispatcher holds.
    pub(crate) fn pod(&self, uid: &PodUid) -> Option<SharedPod> {
        let s = self.pods.get(uid)?;
        let pending = s.pending.as_ref().map(|p| &p.pod);
        pending
            .or(s.current.as_ref().map(|c| &c.update.pod))
            .cloned()
    }

    pub(crate) fn worker_restarted(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
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
    pub(crate) fn sync_known_pods(
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
