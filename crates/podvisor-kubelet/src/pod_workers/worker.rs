//! One pod's worker: runs the syncs the dispatcher hands it, one at a time, and reports
//! how each ended. Before each sync it waits for pod status newer than its last sync (so
//! it never acts on what it saw before its own changes), having asked the PLEG to inspect
//! the pod right away so the wait is a millisecond, not a relist period.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_cri::{ContainerState, PodStatus, SandboxState};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::syncer::{PodSyncer, SyncContext};
use super::types::{PodWork, UpdateType, WorkKind, WorkResult};
use super::{WorkDone, WorkerRestarted};
use crate::pleg::Reinspect;
use crate::status_cache::{CachedStatus, GetNewerThan};

// ---- messages ------------------------------------------------------------------------------

/// Run this work; `cancel` fires if newer work makes it pointless.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Work(pub PodWork, pub CancellationToken);

// ---- actor ---------------------------------------------------------------------------------

/// What every worker needs, shared by all of them.
pub struct WorkerDeps {
    pub syncer: Arc<dyn PodSyncer>,
    pub cache: Recipient<GetNewerThan>,
    pub reinspect: Recipient<Reinspect>,
    pub done: Recipient<WorkDone>,
    pub restarted: Recipient<WorkerRestarted>,
    /// Longest wait for fresh status before syncing with what the cache holds.
    pub status_wait: Duration,
}

pub struct PodWorker {
    uid: String,
    deps: Arc<WorkerDeps>,
    /// When the last sync ended: the next one needs status newer than this.
    last_sync: Option<Instant>,
}

impl PodWorker {
    pub fn new(uid: String, deps: Arc<WorkerDeps>) -> Self {
        Self {
            uid,
            deps,
            last_sync: None,
        }
    }
}

/// Status newer than `min`, asking twice if the cache restarted under the first request,
/// and settling for whatever the cache holds after `wait`.
async fn fresh_status(
    deps: &WorkerDeps,
    uid: &str,
    min: Option<Instant>,
) -> Result<Arc<PodStatus>, String> {
    let mut last_err = String::new();
    for _ in 0..2 {
        let rx = match deps
            .cache
            .send(GetNewerThan {
                uid: uid.to_string(),
                min,
            })
            .await
        {
            Ok(rx) => rx,
            Err(e) => {
                last_err = format!("status cache unavailable: {e}");
                continue;
            }
        };
        match tokio::time::timeout(deps.status_wait, rx).await {
            Ok(Ok(data)) => return usable(data),
            Ok(Err(_)) => last_err = "status cache restarted while waiting".into(),
            Err(_) => {
                debug!(pod_uid = %uid, wait = ?deps.status_wait, "no fresh status in time; using the cached one");
                return match deps
                    .cache
                    .send(GetNewerThan {
                        uid: uid.to_string(),
                        min: None,
                    })
                    .await
                {
                    Ok(rx) => match rx.await {
                        Ok(data) => usable(data),
                        Err(_) => Err("status cache restarted while waiting".into()),
                    },
                    Err(e) => Err(format!("status cache unavailable: {e}")),
                };
            }
        }
    }
    Err(last_err)
}

fn usable(data: CachedStatus) -> Result<Arc<PodStatus>, String> {
    match data.error {
        Some(e) => Err(format!("inspecting the pod failed: {e}")),
        None => Ok(data.status),
    }
}

/// Whether anything of the pod still runs (for runtime-only kills, which skip the wait).
pub fn still_running(status: &PodStatus) -> bool {
    status
        .containers
        .iter()
        .any(|c| c.state == ContainerState::Running)
        || status
            .sandboxes
            .iter()
            .any(|s| s.state == SandboxState::Ready)
}

async fn run(
    deps: Arc<WorkerDeps>,
    work: PodWork,
    ctx: SyncContext,
    min: Option<Instant>,
    ask_pleg: bool,
) -> (WorkResult, bool) {
    let status = if work.running_pod.is_some() {
        // A pod known only from the runtime: its listing is all the status there is.
        Ok(Arc::new(PodStatus::default()))
    } else {
        if ask_pleg {
            deps.reinspect.do_send(Reinspect {
                uid: ctx.uid.clone(),
            });
        }
        fresh_status(&deps, &ctx.uid, min).await
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => return (WorkResult::Failed(e), false),
    };
    let syncer = deps.syncer.clone();
    let sync = async {
        match work.kind {
            WorkKind::Sync => syncer
                .sync_pod(&ctx, work.update_type, &work.pod, &status)
                .await
                .map(|o| (WorkResult::Ok(o), o.changed)),
            WorkKind::Terminating => syncer
                .sync_terminating_pod(
                    &ctx,
                    &work.pod,
                    &status,
                    work.running_pod.as_ref(),
                    work.grace_period.unwrap_or(1),
                    &work.status_fns,
                )
                .await
                .map(|()| (WorkResult::Ok(Default::default()), true)),
            WorkKind::Terminated => syncer
                .sync_terminated_pod(&ctx, &work.pod, &status)
                .await
                .map(|()| (WorkResult::Ok(Default::default()), true)),
        }
    };
    tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => (WorkResult::Cancelled, true),
        r = sync => r.unwrap_or_else(|e| (WorkResult::Failed(e.to_string()), true)),
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
            });
        }
    }

    fn summary(&self) {}
}

impl Handler<Work> for PodWorker {
    type Result = ();

    fn handle(&mut self, Work(work, cancel): Work, ctx: &mut Context<Self>) {
        let seq = work.seq;
        // Something outside changed the pod (a create, an update, a kill): make sure the
        // status the sync sees is not from before it. After our own changes the PLEG was
        // asked already, when the sync that made them ended.
        let ask_pleg = work.update_type != UpdateType::Sync;
        let sync_ctx = SyncContext {
            uid: self.uid.clone(),
            cancel,
        };
        let fut = run(self.deps.clone(), work, sync_ctx, self.last_sync, ask_pleg);
        ctx.wait(fut.into_actor(self).map(move |(result, changed), act, _| {
            act.last_sync = Some(Instant::now());
            if changed {
                // Fresh status now, not after the next relist: the PLEG's events for what
                // this sync did bring the next sync (and the status) in milliseconds.
                act.deps.reinspect.do_send(Reinspect {
                    uid: act.uid.clone(),
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
