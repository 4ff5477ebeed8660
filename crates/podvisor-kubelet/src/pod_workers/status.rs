//! One pod's sync status: where it is in syncing → terminating → terminated → finished
//! (one way only), and what is owed to whoever asked for its termination.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::pod;
use super::types::{
    KillPodOptions, PodWork, RuntimePod, StatusFn, UpdateType, WorkKind, WorkResult,
};

/// An update not yet handed to the worker; only the newest is kept. Its kind is decided
/// when it is delivered, from the pod's state at that moment.
#[derive(Clone)]
pub struct Pending {
    pub update_type: UpdateType,
    pub pod: Arc<Pod>,
    pub running_pod: Option<RuntimePod>,
    pub start_time: Option<Instant>,
}

pub struct PodSyncStatus {
    pub full_name: String,
    pub is_static: bool,
    pub synced_at: Instant,
    pub terminating_at: Option<Instant>,
    pub terminated_at: Option<Instant>,
    /// Seconds; 0 until termination is requested. Only ever shrinks after that.
    pub grace_period: i64,
    pub deleted: bool,
    pub evicted: bool,
    pub finished: bool,
    /// A create for this UID arrived while it was terminating: after it finishes, the
    /// sync loop may add it again.
    pub restart_requested: bool,
    /// Passed the static-pod start gate (always true for other pods once delivered).
    pub started: bool,
    pub working: bool,
    pub pending: Option<Pending>,
    /// The update behind the work in flight (or last run), for redelivery after a worker
    /// restart and for the synthetic update after termination.
    pub current: Option<Pending>,
    pub current_seq: u64,
    pub current_kind: WorkKind,
    pub notify_post_terminating: Vec<oneshot::Sender<()>>,
    pub status_post_terminating: Vec<StatusFn>,
    pub last_result: Option<(WorkKind, WorkResult)>,
}

impl PodSyncStatus {
    pub fn new(pod: &Pod, now: Instant) -> Self {
        Self {
            full_name: pod::full_name(pod),
            is_static: pod::is_static(pod),
            synced_at: now,
            terminating_at: None,
            terminated_at: None,
            grace_period: 0,
            deleted: false,
            evicted: false,
            finished: false,
            restart_requested: false,
            started: false,
            working: false,
            pending: None,
            current: None,
            current_seq: 0,
            current_kind: WorkKind::Sync,
            notify_post_terminating: Vec::new(),
            status_post_terminating: Vec::new(),
            last_result: None,
        }
    }

    pub fn termination_requested(&self) -> bool {
        self.terminating_at.is_some()
    }

    pub fn terminated(&self) -> bool {
        self.terminated_at.is_some()
    }

    /// The work an update becomes if delivered now.
    pub fn kind_now(&self) -> WorkKind {
        if self.terminated() {
            WorkKind::Terminated
        } else if self.termination_requested() {
            WorkKind::Terminating
        } else {
            WorkKind::Sync
        }
    }

    pub fn work(&self, update: &Pending, seq: u64) -> PodWork {
        let kind = self.kind_now();
        PodWork {
            seq,
            kind,
            update_type: update.update_type,
            pod: update.pod.clone(),
            running_pod: update.running_pod.clone(),
            grace_period: (kind == WorkKind::Terminating).then_some(self.grace_period),
            status_fns: if kind == WorkKind::Terminating {
                self.status_post_terminating.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// Everyone waiting for the termination learns it is done; status adjustments that were
    /// not applied by now never will be.
    pub fn notify_terminated(&mut self) {
        for tx in self.notify_post_terminating.drain(..) {
            let _ = tx.send(());
        }
        self.status_post_terminating.clear();
    }

    /// Takes on a kill's completion channel and status function (terminating pods only).
    pub fn absorb_kill(&mut self, kill: &mut KillPodOptions) {
        if let Some(tx) = kill.completed.take() {
            self.notify_post_terminating.push(tx);
        }
        if let Some(f) = kill.status_fn.take() {
            self.status_post_terminating.push(f);
        }
    }
}

/// The grace period a terminating pod gets, and whether it just shrank. It can only
/// shrink: the deletion's grace period (the API's word) beats the spec's, a kill's
/// override wins when shorter, the spec's applies only if nothing else set one, and an
/// explicit zero ("now") becomes one second, the least a container is given.
pub fn effective_grace_period(
    status: &PodSyncStatus,
    pod: &Pod,
    kill: Option<&KillPodOptions>,
) -> (i64, bool) {
    let mut grace = (status.grace_period > 0).then_some(status.grace_period);
    let mut tighten = |candidate: i64| {
        grace = Some(grace.map_or(candidate, |g| g.min(candidate)));
    };
    if let Some(deletion) = pod::deletion_grace_period(pod) {
        tighten(deletion);
    }
    if let Some(o) = kill.and_then(|k| k.grace_period_override) {
        tighten(o);
    }
    let grace = grace.unwrap_or_else(|| pod::spec_grace_period(pod)).max(1);
    (
        grace,
        status.grace_period != 0 && status.grace_period != grace,
    )
}
