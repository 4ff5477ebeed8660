//! The pod workers' decisions (the kubelet's `UpdatePod` and `managePodLoop` rules) as a
//! plain state machine. The dispatcher actor feeds it updates, work reports and due
//! deadlines, and carries out the [`Effect`]s it returns (including the deadlines, which
//! it keeps in its delay queue); tests drive it directly.

use std::collections::HashMap;
use std::time::Duration;

use podvisor_core::{PodExt, PodUid, SharedPod};
use tokio::time::Instant;
use tracing::debug;

use super::static_gate::StaticGate;
use super::status::{Delivered, Pending, PodSyncStatus};
use crate::protocol::updates::{KillPodOptions, RuntimePod, UpdatePodOptions, UpdateType};
use crate::protocol::work::{PodWork, WorkKind};

/// What the dispatcher must do after a decision.
#[derive(Debug)]
pub(crate) enum Effect {
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
    /// Next sync after a successful one (and up to half of it more: `resync_after`), or
    /// sooner when the sync says when (a crash-loop backoff that ends).
    pub resync_interval: Duration,
    /// Next attempt after a failed one.
    pub backoff: Duration,
}

impl Timings {
    /// How long after a sync that went well its pod is looked at again: the resync
    /// interval and up to half of it more, as the kubelet jitters it, so pods started
    /// together do not all resync in the same second ever after. The share is a hash of
    /// the pod and the delivery: the same inputs give the same time (paused-time tests
    /// stay exact).
    pub(crate) fn resync_after(&self, uid: &PodUid, seq: u64) -> Duration {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        (uid, seq).hash(&mut h);
        let share = u32::try_from(h.finish() % 1024).unwrap_or(0);
        self.resync_interval + self.resync_interval * share / 2048
    }
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            resync_interval: Duration::from_secs(60),
            backoff: Duration::from_secs(10),
        }
    }
}

#[derive(Default)]
pub(crate) struct PodWorkersState {
    /// Boxed: a slot with the status inline was some 630 bytes (0.64 MB with 500 pods'
    /// 1,024 slots), most of it the table's spare room.
    pub(super) pods: HashMap<PodUid, Box<PodSyncStatus>>,
    pub(super) gate: StaticGate,
    pub(super) timings: Timings,
}

/// Delivery numbers are unique in the process, so a report about work delivered by an
/// earlier dispatcher instance never matches work delivered by this one.
fn next_delivery() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub(super) fn complete(kill: Option<KillPodOptions>) {
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

impl PodWorkersState {
    pub(crate) fn new(timings: Timings) -> Self {
        Self {
            timings,
            ..Default::default()
        }
    }

    pub(crate) fn status(&self, uid: &str) -> Option<&PodSyncStatus> {
        self.pods.get(uid).map(Box::as_ref)
    }

    pub(crate) fn len(&self) -> usize {
        self.pods.len()
    }

    #[cfg(test)]
    pub(crate) fn uids(&self) -> impl Iterator<Item = &PodUid> {
        self.pods.keys()
    }

    /// A pod seen for the first time in a terminal phase may be done already: whether it is
    /// depends on the cached runtime status, which the caller must look up first.
    pub(crate) fn needs_cached_status(&self, opts: &UpdatePodOptions) -> bool {
        opts.pod
            .as_ref()
            .is_some_and(|p| p.is_terminal() && !self.pods.contains_key(p.uid()))
    }

    /// The kubelet's `UpdatePod`. `cached_terminal`: for a pod seen for the first time in
    /// a terminal phase, whether the runtime status cache shows nothing running.
    pub(crate) fn update_pod(
        &mut self,
        mut opts: UpdatePodOptions,
        cached_terminal: Option<bool>,
        now: Instant,
    ) -> Vec<Effect> {
        let update_type = opts.update_type.unwrap_or(UpdateType::Sync);
        let kill = opts.kill.take();
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
                    .insert(uid, Box::new(PodSyncStatus::done_before_seen(&pod)));
                complete(kill);
                return Vec::new();
            }
            let status = PodSyncStatus::new(&pod);
            if status.is_static() {
                self.gate.arrive(status.key(), &uid);
            }
            self.pods.insert(uid.clone(), Box::new(status));
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
        let cancel = status.take_kill(&pod, runtime_only, update_type, kill, now);
        status.set_pending(Pending {
            update_type,
            pod,
            running_pod,
            start_time: opts.start_time,
        });
        if status.working {
            return if cancel {
                vec![Effect::Cancel(uid)]
            } else {
                Vec::new()
            };
        }
        self.deliver(&uid, now)
    }

    /// Hands the pod's pending update to its worker, unless it has none, or is a static pod
    /// that must wait for another with the same key.
    pub(super) fn deliver(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
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
    pub(super) fn start_next_static(&mut self, uid: &PodUid, now: Instant) -> Vec<Effect> {
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
    /// The work `seq` of pod `uid`, if it is what the pod's worker runs: the kubelet's
    /// `operation_type` for it and when its update was made.
    pub(crate) fn current_work(
        &self,
        uid: &str,
        seq: u64,
    ) -> Option<(&'static str, Option<Instant>)> {
        let s = self.pods.get(uid).filter(|s| s.working)?;
        let c = s.current.as_ref().filter(|c| c.seq == seq)?;
        let operation = match c.kind {
            WorkKind::Terminated => "terminated",
            _ => c.update.update_type.label(),
        };
        Some((operation, c.update.start_time))
    }

    pub(crate) fn is_current_work(&self, uid: &str, seq: u64) -> bool {
        self.pods
            .get(uid)
            .is_some_and(|s| s.working && s.current.as_ref().is_some_and(|c| c.seq == seq))
    }
}
