//! One pod's sync status: its [`Lifecycle`], the update waiting for its worker and the one
//! it runs, and what is owed to whoever asked for its termination.

use podvisor_core::{GracePeriod, ObjectKey, PodExt, SharedPod};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::lifecycle::{Cause, Lifecycle, Termination};
use crate::protocol::updates::{KillPodOptions, RuntimePod, StatusFn, UpdateType};
use crate::protocol::work::{PodWork, WorkKind, WorkResult};

/// An update not yet handed to the worker; only the newest is kept. Its kind is decided
/// when it is delivered, from the pod's lifecycle at that moment.
#[derive(Clone)]
pub(crate) struct Pending {
    pub update_type: UpdateType,
    pub pod: SharedPod,
    pub running_pod: Option<RuntimePod>,
    pub start_time: Option<Instant>,
}

impl Pending {
    /// This update again, as a resync of what it asked for.
    fn resync(&self, now: Instant) -> Pending {
        Pending {
            update_type: if self.running_pod.is_some() {
                UpdateType::Kill
            } else {
                UpdateType::Sync
            },
            start_time: Some(now),
            ..self.clone()
        }
    }
}

/// The update behind the work in flight (or last run), for redelivery after a worker
/// restart, for resyncs, and for the synthetic update after termination.
pub(crate) struct Delivered {
    pub update: Pending,
    pub seq: u64,
    pub kind: WorkKind,
}

/// The completion channels and status adjustments of the kills a termination absorbed.
#[derive(Default)]
struct Owed {
    notify: Vec<oneshot::Sender<()>>,
    status_fns: Vec<StatusFn>,
}

pub(crate) struct PodSyncStatus {
    key: ObjectKey,
    is_static: bool,
    pub(crate) lifecycle: Lifecycle,
    /// A create for this UID arrived while it was terminating: after it finishes, the
    /// sync loop may add it again.
    pub(crate) restart_requested: bool,
    /// Passed the static-pod start gate (every other pod passes it at its first delivery).
    pub(crate) started: bool,
    pub(crate) working: bool,
    pub(crate) pending: Option<Pending>,
    pub(crate) current: Option<Delivered>,
    owed: Owed,
    pub(crate) last_result: Option<(WorkKind, WorkResult)>,
}

impl PodSyncStatus {
    pub(crate) fn new(pod: &SharedPod) -> Self {
        Self {
            key: pod.key(),
            is_static: pod.is_static(),
            lifecycle: Lifecycle::Syncing,
            restart_requested: false,
            started: false,
            working: false,
            pending: None,
            current: None,
            owed: Owed::default(),
            last_result: None,
        }
    }

    /// A pod the pod workers first see when it is already done: nothing to start, nothing
    /// to stop.
    pub(crate) fn done_before_seen(pod: &SharedPod) -> Self {
        Self {
            lifecycle: Lifecycle::Finished(None),
            ..Self::new(pod)
        }
    }

    /// Namespace and name: static pods with one key never run at the same time.
    pub(crate) fn key(&self) -> &ObjectKey {
        &self.key
    }

    pub(crate) fn is_static(&self) -> bool {
        self.is_static
    }

    pub(crate) fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    pub(crate) fn is_working(&self) -> bool {
        self.working
    }

    #[cfg(test)]
    pub(crate) fn has_started(&self) -> bool {
        self.started
    }

    pub(crate) fn termination_requested(&self) -> bool {
        self.lifecycle.termination_requested()
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.lifecycle.is_terminated()
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.lifecycle.is_finished()
    }

    pub(crate) fn restart_requested(&self) -> bool {
        self.restart_requested
    }

    pub(crate) fn pending_update(&self) -> Option<UpdateType> {
        self.pending.as_ref().map(|p| p.update_type)
    }

    pub(crate) fn last_result(&self) -> Option<&(WorkKind, WorkResult)> {
        self.last_result.as_ref()
    }

    /// The grace period in force while terminating.
    pub(crate) fn grace_period(&self) -> Option<GracePeriod> {
        self.lifecycle.grace()
    }

    /// When its termination was asked for, while it is terminating.
    pub(crate) fn terminating_since(&self) -> Option<Instant> {
        match &self.lifecycle {
            Lifecycle::Terminating(t) => Some(t.since),
            _ => None,
        }
    }

    pub(crate) fn cause(&self) -> Option<Cause> {
        self.lifecycle.termination().map(|t| t.cause)
    }

    pub(crate) fn is_runtime_only(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|c| c.update.running_pod.is_some())
    }

    /// Takes an update's word on termination: it may start it (a deletion, a terminal
    /// phase, a kill, an orphan), and a kill's completion channel, status adjustment and
    /// grace period go with a termination; a kill for a pod that is not terminating is done
    /// at once. Whether the work in flight must be cancelled (the pod just began
    /// terminating, or its grace period shrank).
    pub(crate) fn take_kill(
        &mut self,
        pod: &SharedPod,
        runtime_only: bool,
        update_type: UpdateType,
        mut kill: Option<KillPodOptions>,
        now: Instant,
    ) -> bool {
        let cause = termination_cause(pod, runtime_only, update_type, kill.as_ref());
        let began = match cause {
            Some(cause) if !self.termination_requested() => {
                let grace =
                    requested_grace(pod, kill.as_ref()).unwrap_or_else(|| pod.spec_grace_period());
                self.terminate(cause, grace, now);
                true
            }
            _ => false,
        };
        if self.lifecycle.work_kind() != Some(WorkKind::Terminating) {
            if let Some(k) = kill {
                k.complete();
            }
            return began;
        }
        let shrank = match (began, requested_grace(pod, kill.as_ref())) {
            (false, Some(g)) => self.lifecycle.shrink_grace(g).unwrap_or(false),
            _ => false,
        };
        if let Some(k) = kill.as_mut() {
            self.absorb_kill(k);
        }
        began || shrank
    }

    /// Keeps `update` as the newest undelivered one, with the earliest start time of those
    /// it replaces.
    pub(crate) fn set_pending(&mut self, mut update: Pending) {
        if let Some(p) = &self.pending {
            update.start_time = match (p.start_time, update.start_time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.pending = Some(update);
    }

    /// Starts terminating (a no-op when it already is).
    pub(crate) fn terminate(&mut self, cause: Cause, grace: GracePeriod, now: Instant) {
        let termination = Termination {
            cause,
            since: now,
            grace,
        };
        if let Err(e) = self.lifecycle.terminate(termination) {
            tracing::debug!(error = %e, "termination already under way");
        }
    }

    /// The work `update` becomes if delivered now (`None` once finished).
    pub(crate) fn work(&self, update: &Pending, seq: u64) -> Option<PodWork> {
        let kind = self.lifecycle.work_kind()?;
        let terminating = kind == WorkKind::Terminating;
        Some(PodWork {
            seq,
            kind,
            update_type: update.update_type,
            pod: update.pod.clone(),
            running_pod: update.running_pod.clone(),
            grace_period: self.lifecycle.grace(),
            status_fns: if terminating {
                self.owed.status_fns.clone()
            } else {
                Vec::new()
            },
        })
    }

    /// The newest update as a resync: what is pending, else what ran last.
    pub(crate) fn take_resync(&mut self, now: Instant) -> Option<Pending> {
        self.pending
            .take()
            .or_else(|| self.current.as_ref().map(|c| c.update.resync(now)))
    }

    /// The update that ran last goes again (a lost delivery, a terminated sync owed).
    pub(crate) fn repeat_current(&mut self) {
        if self.pending.is_none() {
            self.pending = self.current.as_ref().map(|c| c.update.clone());
        }
    }

    /// Everyone waiting for the termination learns it is done; status adjustments that were
    /// not applied by now never will be.
    pub(crate) fn notify_terminated(&mut self) {
        for tx in self.owed.notify.drain(..) {
            let _ = tx.send(());
        }
        self.owed.status_fns.clear();
    }

    /// Takes on a kill's completion channel and status function (terminating pods only).
    pub(crate) fn absorb_kill(&mut self, kill: &mut KillPodOptions) {
        if let Some(tx) = kill.completed.take() {
            self.owed.notify.push(tx);
        }
        if let Some(f) = kill.status_fn.take() {
            self.owed.status_fns.push(f);
        }
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

/// The grace period a pod and a kill ask for: the deletion's and the override's, the
/// shorter; `None` when neither says (the spec's applies then).
pub(crate) fn requested_grace(
    pod: &SharedPod,
    kill: Option<&KillPodOptions>,
) -> Option<GracePeriod> {
    let deletion = pod.deletion_grace_period();
    let over = kill.and_then(|k| k.grace_period_override);
    match (deletion, over) {
        (Some(d), Some(o)) => Some(d.tightened(o)),
        (d, o) => d.or(o),
    }
}
