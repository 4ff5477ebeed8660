//! One pod's worker: runs the syncs the dispatcher hands it, one at a time, and reports
//! how each ended. After a sync that changed the runtime it waits, before the next, for
//! pod status newer than that sync (so it never acts on what it saw before its own
//! changes), having asked the PLEG to inspect the pod right away so the wait is a
//! millisecond, not a relist period; or for status showing the container whose start
//! was that sync's last change, which the start's own event brings (the PLEG then need
//! not inspect). After a sync that changed nothing the cached status is as new as
//! needed: whatever changed since is the PLEG's to report, and it stores a pod's status
//! before it reports the pod's events.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::PodUid;
use podvisor_cri::{ContainerState, PodStatus, SandboxState};
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::protocol::cache::{CachedStatus, ContainerId, GetNewerThan, Need};
use crate::protocol::lifecycle::Reinspect;
use crate::protocol::sync::{PodSyncer, SyncContext, SyncError, Termination};
use crate::protocol::updates::UpdateType;
use crate::protocol::work::{
    PodWork, StatusUnavailable, Work, WorkDone, WorkKind, WorkResult, WorkerRestarted,
};

/// What every worker needs, shared by all of them.
pub(crate) struct WorkerDeps {
    pub syncer: Arc<dyn PodSyncer>,
    pub cache: Recipient<GetNewerThan>,
    pub reinspect: Recipient<Reinspect>,
    pub done: Recipient<WorkDone>,
    pub restarted: Recipient<WorkerRestarted>,
    /// Longest wait for fresh status before syncing with what the cache holds.
    pub status_wait: Duration,
}

pub struct PodWorker {
    uid: PodUid,
    deps: Arc<WorkerDeps>,
    /// When the last sync ended, and whether it changed the runtime (or failed): the next
    /// sync needs status newer than its end if it did, or if the next one is about
    /// something new from outside (the PLEG is asked to inspect the pod first).
    last_sync: Option<Instant>,
    last_changed: bool,
    /// The container whose start was the last sync's last change: status showing it
    /// started will do for the next sync, however old (`SyncOutcome::last_started`).
    last_started: Option<ContainerId>,
}

impl PodWorker {
    pub(crate) fn new(uid: PodUid, deps: Arc<WorkerDeps>) -> Self {
        Self {
            uid,
            deps,
            last_sync: None,
            last_changed: false,
            last_started: None,
        }
    }
}

/// One question to the cache: the receiver it answers on, then the answer.
async fn ask(
    deps: &WorkerDeps,
    uid: &PodUid,
    need: Need,
    wait: Option<Duration>,
) -> Result<Option<CachedStatus>, StatusUnavailable> {
    let rx = deps
        .cache
        .send(GetNewerThan {
            uid: uid.clone(),
            need,
        })
        .await?;
    let answer = match wait {
        Some(w) => match tokio::time::timeout(w, rx).await {
            Ok(a) => a,
            Err(_) => return Ok(None),
        },
        None => rx.await,
    };
    answer
        .map(Some)
        .map_err(|_| StatusUnavailable::CacheRestarted)
}

/// Status as fresh as `need` says, asking twice if the cache restarted under the first
/// request, and settling for whatever the cache holds after the wait.
async fn fresh_status(
    deps: &WorkerDeps,
    uid: &PodUid,
    need: Need,
) -> Result<Arc<PodStatus>, StatusUnavailable> {
    let mut last_err = StatusUnavailable::CacheRestarted;
    for _ in 0..2 {
        match ask(deps, uid, need.clone(), Some(deps.status_wait)).await {
            Ok(Some(data)) => return usable(data),
            Ok(None) => {
                debug!(pod_uid = %uid, wait = ?deps.status_wait, "no fresh status in time; using the cached one");
                let data = ask(deps, uid, Need::default(), None).await?;
                return usable(data.ok_or(StatusUnavailable::CacheRestarted)?);
            }
            Err(e) => last_err = e,
        }
    }
    Err(last_err)
}

fn usable(data: CachedStatus) -> Result<Arc<PodStatus>, StatusUnavailable> {
    match data.error {
        Some(e) => Err(StatusUnavailable::Inspection(e)),
        None => Ok(data.status),
    }
}

/// Whether anything of the pod still runs (for runtime-only kills, which skip the wait).
pub(crate) fn still_running(status: &PodStatus) -> bool {
    status
        .containers
        .iter()
        .any(|c| c.state == ContainerState::Running)
        || status
            .sandboxes
            .iter()
            .any(|s| s.state == SandboxState::Ready)
}

/// Calls the sync function the work asks for; whether the runtime may have changed.
async fn call(
    syncer: &dyn PodSyncer,
    ctx: &SyncContext,
    work: &PodWork,
    status: &Arc<PodStatus>,
) -> Result<(WorkResult, bool), SyncError> {
    Ok(match work.kind {
        WorkKind::Sync => {
            let o = syncer
                .sync_pod(ctx, work.update_type, &work.pod, status)
                .await?;
            let changed = o.changed;
            (WorkResult::Ok(o), changed)
        }
        WorkKind::Terminating => {
            let termination = Termination {
                grace: work.grace_period.unwrap_or(podvisor_core::GracePeriod::MIN),
                running_pod: work.running_pod.as_ref(),
                status_fns: &work.status_fns,
            };
            syncer
                .sync_terminating_pod(ctx, &work.pod, status, termination)
                .await?;
            (WorkResult::Ok(Default::default()), true)
        }
        WorkKind::Terminated => {
            syncer.sync_terminated_pod(ctx, &work.pod, status).await?;
            (WorkResult::Ok(Default::default()), true)
        }
    })
}

async fn run(
    deps: Arc<WorkerDeps>,
    work: PodWork,
    ctx: SyncContext,
    need: Need,
    ask_pleg: bool,
) -> (WorkResult, bool) {
    let status = if work.running_pod.is_some() {
        // A pod known only from the runtime: its listing is all the status there is.
        Arc::new(PodStatus::default())
    } else {
        if ask_pleg {
            deps.reinspect.do_send(Reinspect::pod(ctx.uid.clone()));
        }
        match fresh_status(&deps, &ctx.uid, need).await {
            Ok(s) => s,
            Err(e) => return (WorkResult::failed(e), false),
        }
    };
    tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => (WorkResult::Cancelled, true),
        r = call(deps.syncer.as_ref(), &ctx, &work, &status) => {
            r.unwrap_or_else(|e| (WorkResult::failed(e), true))
        }
    }
}

impl Actor for PodWorker {
    type Context = Context<Self>;
}

impl SupervisedActor for PodWorker {
    const KIND: &'static str = "pod-worker";
    /// The dispatcher holds the pod's state and publishes the summary (`annotate`).
    type Summary = ();

    fn rebuild(&mut self, _ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        if start.is_restart() {
            warn!(pod_uid = %self.uid, restarts = start.restarts, "pod worker restarted; asking for the newest update");
            self.deps.restarted.do_send(WorkerRestarted {
                uid: self.uid.clone(),
                restarts: start.restarts,
            });
        }
    }

    fn summary(&self) {}
}

impl Handler<Work> for PodWorker {
    type Result = ();

    fn handle(&mut self, Work(work, cancel): Work, ctx: &mut Context<Self>) {
        let seq = work.seq;
        // The pod's spec changed: the sync that applies it sees status from after the last
        // sync. A kill needs none fresher than the cache's: it stops what the status shows
        // running (one that exited since is stopped harmlessly), and whatever this worker
        // made is in it (after its own changes it waits for the PLEG, asked when the sync
        // that made them ended). Everything else that changes is the PLEG's to report.
        let ask_pleg = work.update_type == UpdateType::Update;
        let sync_ctx = SyncContext {
            uid: self.uid.clone(),
            cancel,
        };
        // A periodic or event-driven sync after one that changed nothing takes the newest
        // status there is: waiting for one newer than that sync would wait for a change
        // that may never come (with an evented PLEG, until the next safety relist).
        let min = self.last_sync.filter(|_| ask_pleg || self.last_changed);
        // The PLEG is asked only for status the sync waits for, and not twice: a first
        // sync takes what the cache holds, and after a sync that changed the runtime the
        // PLEG was asked when it ended (a 500-pod burst made 1,000 listings for nothing,
        // and removing them 500 more; on containerd 1.6 each walks every pod).
        let ask_pleg = ask_pleg && min.is_some() && !self.last_changed;
        let need = Need {
            min,
            showing: self.last_started.take().filter(|_| self.last_changed),
        };
        let fut = run(self.deps.clone(), work, sync_ctx, need, ask_pleg);
        ctx.wait(fut.into_actor(self).map(move |(result, changed), act, _| {
            act.last_sync = Some(Instant::now());
            act.last_changed = changed;
            act.last_started = match &result {
                WorkResult::Ok(o) if changed => o.last_started.clone(),
                _ => None,
            };
            if changed {
                // Fresh status now, not after the next relist: the PLEG's events for what
                // this sync did bring the next sync (and the status) in milliseconds. A
                // sync whose last change was a start names it: the start's event has
                // mostly brought that status already, and then no inspection is needed.
                act.deps.reinspect.do_send(Reinspect {
                    uid: act.uid.clone(),
                    started: act.last_started.clone(),
                });
            }
            if let WorkResult::Failed(e) = &result {
                warn!(pod_uid = %act.uid, error = %e, "pod sync failed");
            }
            act.deps.done.do_send(WorkDone {
                uid: act.uid.clone(),
                seq,
                result,
            });
        }));
    }
}
