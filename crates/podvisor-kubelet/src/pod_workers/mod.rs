//! The pod workers: a dispatcher actor that owns every pod's lifecycle state (the
//! kubelet's `podWorkers`), and one worker actor per pod UID that runs its syncs.
//!
//! The dispatcher decides (in `state.rs`, plain data) whether each update sets a pod up,
//! tears it down or cleans up after it, keeps only the newest undelivered update per pod,
//! cancels a sync that a termination makes pointless, and hands work to the pod's worker
//! only when it is idle, so each pod has at most one sync in flight.
//!
//! Restarts: a restarted worker asks for its pod's newest update (the work it was running
//! died with it). A restarted dispatcher starts with no state; it asks its desired-pods
//! source for the pods that should run and lists the runtime, updates every desired pod
//! (its first sync adopts what runs) and, once the source has heard from every config
//! source, kills the podvisor pods in the runtime that nobody wants. A restart alone kills
//! nothing: the dispatcher shares a rest-for-one group with the workers' supervisor, so
//! its workers restart with it and are recreated from that rebuild.

pub mod pod;
mod queue;
mod state;
mod status;
mod syncer;
mod types;
mod worker;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{
    ActorRef, ChildSpec, Recipient, Restart, SendError, StartChild, StartInfo, StopChild,
    SupervisedActor,
};
use podvisor_cri::{Runtime, labels};
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use queue::WorkQueue;
pub use state::{Effect, PodWorkersState, Timings};
pub use status::{PodSyncStatus, effective_grace_period};
pub use syncer::{PodSyncer, SyncContext, SyncError};
pub use types::*;
pub use worker::{PodWorker, Work, WorkerDeps, still_running};

#[cfg(test)]
#[path = "state_tests.rs"]
mod state_tests;

use crate::pleg::Reinspect;
use crate::status_cache::{GetNewerThan, GetStatus};

// ---- messages ------------------------------------------------------------------------------

/// The kubelet's `UpdatePod`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct UpdatePod(pub UpdatePodOptions);

/// Forgets finished pods not in `desired` and reports every known pod's state.
#[derive(Message)]
#[rtype(result = "BTreeMap<String, PodWorkerState>")]
pub struct SyncKnownPods(pub HashSet<String>);

/// The pods whose resync or retry is due now.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub struct DrainDue;

/// Whether a pod may still have running containers (unknown pods may, until the first
/// `SyncKnownPods`).
#[derive(Message)]
#[rtype(result = "bool")]
pub struct CouldHaveRunningContainers(pub String);

/// A worker's report on the work it was given.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct WorkDone {
    pub uid: String,
    pub seq: u64,
    pub result: WorkResult,
}

/// A worker restarted and lost the work it was running.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct WorkerRestarted {
    pub uid: String,
}

/// Asked of the desired-pods source (the sync loop) by a dispatcher that is rebuilding.
#[derive(Message)]
#[rtype(result = "DesiredPods")]
pub struct GetDesiredPods;

pub struct DesiredPods {
    pub pods: Vec<Arc<Pod>>,
    /// Every config source has delivered its pods: what is not desired now is an orphan.
    pub all_sources_seen: bool,
}

// ---- actor ---------------------------------------------------------------------------------

/// Everything the dispatcher talks to.
pub struct PodWorkersDeps {
    pub syncer: Arc<dyn PodSyncer>,
    pub runtime: Arc<dyn Runtime>,
    pub cache: Recipient<GetNewerThan>,
    pub cache_get: Recipient<GetStatus>,
    pub reinspect: Recipient<Reinspect>,
    /// The supervisor of the workers (one-for-one, dynamic).
    pub start_worker: Recipient<StartChild>,
    pub stop_worker: Recipient<StopChild>,
    /// Where a rebuilding dispatcher gets the desired pods; `None` in tests of the
    /// dispatcher alone.
    pub desired: Option<Recipient<GetDesiredPods>>,
    pub timings: Timings,
    pub status_wait: Duration,
    /// Runtime pods labelled with this node are the agent's own (see `labels::owned_by`).
    pub node_name: String,
}

/// Mailbox capacity of one pod worker: the dispatcher sends it one work item at a time.
const WORKER_CAPACITY: usize = 4;

pub struct PodWorkers {
    deps: Arc<PodWorkersDeps>,
    state: PodWorkersState,
    me: Option<ActorRef<PodWorkers>>,
    worker_deps: Option<Arc<WorkerDeps>>,
    workers: HashMap<String, ActorRef<PodWorker>>,
    cancels: HashMap<String, CancellationToken>,
    /// Wall-clock time of each pod's last sync result, for the debug view.
    last_result_at: HashMap<String, u64>,
}

/// What the debug endpoint shows for one pod worker (published by the dispatcher).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerSummary {
    pub phase: &'static str,
    pub working: bool,
    pub pending: Option<UpdateType>,
    pub grace_period: Option<i64>,
    pub restart_requested: bool,
    pub last_result: Option<String>,
    pub last_result_unix_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatcherSummary {
    pub pods: usize,
    pub workers: usize,
}

impl PodWorkers {
    pub fn new(deps: Arc<PodWorkersDeps>) -> Self {
        Self {
            state: PodWorkersState::new(deps.timings),
            deps,
            me: None,
            worker_deps: None,
            workers: HashMap::new(),
            cancels: HashMap::new(),
            last_result_at: HashMap::new(),
        }
    }

    fn worker(&mut self, uid: &str) -> Option<ActorRef<PodWorker>> {
        if let Some(w) = self.workers.get(uid) {
            return Some(w.clone());
        }
        let deps = self.worker_deps.clone()?;
        let u = uid.to_string();
        let (worker, spec) = ChildSpec::of(move || PodWorker::new(u.clone(), deps.clone()))
            .key(uid)
            .capacity(WORKER_CAPACITY)
            .restart(Restart::Transient)
            .build();
        if let Err(e) = self.deps.start_worker.try_send(StartChild(spec)) {
            warn!(pod_uid = %uid, error = ?e, "cannot start a pod worker");
            return None;
        }
        self.workers.insert(uid.to_string(), worker.clone());
        Some(worker)
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Deliver(work) => {
                    let uid = pod::uid(&work.pod).to_string();
                    let seq = work.seq;
                    let token = CancellationToken::new();
                    let sent = match self.worker(&uid) {
                        Some(worker) => match worker.try_send(Work(work, token.clone())) {
                            Ok(()) => Ok(()),
                            Err(e) => {
                                if matches!(e, SendError::Closed(_)) {
                                    // Gone for good: the next delivery starts a new one.
                                    self.workers.remove(&uid);
                                }
                                Err(format!("its worker refused the work: {e}"))
                            }
                        },
                        None => Err("no pod worker could be started".to_string()),
                    };
                    match sent {
                        Ok(()) => {
                            self.cancels.insert(uid.clone(), token);
                            self.publish(&uid);
                        }
                        // Undelivered work is failed work: backed off and tried again,
                        // never left marked as running with nobody running it.
                        Err(reason) => {
                            warn!(pod_uid = %uid, %reason, "pod work not delivered; retrying after the backoff");
                            let effects = self.state.work_done(
                                &uid,
                                seq,
                                WorkResult::Failed(reason),
                                Instant::now(),
                            );
                            self.apply(effects);
                        }
                    }
                }
                Effect::Cancel(uid) => {
                    if let Some(t) = self.cancels.get(&uid) {
                        t.cancel();
                    }
                    self.publish(&uid);
                }
                Effect::StopWorker(uid) => {
                    self.cancels.remove(&uid);
                    self.last_result_at.remove(&uid);
                    if let Some(w) = self.workers.remove(&uid) {
                        self.publish_for(&uid, &w);
                        self.deps.stop_worker.do_send(StopChild(w.id().clone()));
                    }
                }
            }
        }
    }

    fn publish(&self, uid: &str) {
        if let Some(w) = self.workers.get(uid) {
            self.publish_for(uid, w);
        }
    }

    fn publish_for(&self, uid: &str, worker: &ActorRef<PodWorker>) {
        let Some(s) = self.state.status(uid) else {
            return;
        };
        let phase = if s.finished {
            "finished"
        } else if s.terminated() {
            "terminated"
        } else if s.termination_requested() {
            "terminating"
        } else {
            "syncing"
        };
        let last_result = s.last_result.as_ref().map(|(kind, r)| match r {
            WorkResult::Ok(_) => format!("{kind:?} ok"),
            WorkResult::Failed(e) => format!("{kind:?} failed: {e}"),
            WorkResult::Cancelled => format!("{kind:?} cancelled"),
        });
        let last_result_unix_ms = self.last_result_at.get(uid).copied();
        worker.annotate(&WorkerSummary {
            phase,
            working: s.working,
            pending: s.pending.as_ref().map(|p| p.update_type),
            grace_period: (s.grace_period > 0).then_some(s.grace_period),
            restart_requested: s.restart_requested,
            last_result,
            last_result_unix_ms,
        });
    }

    fn update(&mut self, opts: UpdatePodOptions, ctx: &mut Context<Self>) {
        let uid = opts.uid().to_string();
        if !self.state.needs_cached_status(&opts) {
            let effects = self.state.update_pod(opts, None, Instant::now());
            self.apply(effects);
            // A queued update or a restart request changes what the snapshot shows even
            // when nothing is delivered.
            self.publish(&uid);
            return;
        }
        // First sight of a pod in a terminal phase: it may be done already, which only the
        // cache can say. Wait for it, so updates stay in order.
        let cache = self.deps.cache_get.clone();
        let u = uid.clone();
        ctx.wait(
            async move { cache.send(GetStatus { uid: u }).await.ok() }
                .into_actor(self)
                .map(move |cached, act, _| {
                    let terminal = cached.map(|c| !still_running(&c.status));
                    let effects = act.state.update_pod(opts, terminal, Instant::now());
                    act.apply(effects);
                    act.publish(&uid);
                }),
        );
    }

    /// Rebuild after a restart: desired pods are updated (their first sync adopts what
    /// runs); podvisor's runtime pods that nobody wants are killed, but only once every
    /// config source has been heard from.
    fn rebuild_from_truth(&mut self, ctx: &mut Context<Self>) {
        let Some(desired) = self.deps.desired.clone() else {
            return;
        };
        let runtime = self.deps.runtime.clone();
        ctx.wait(
            async move {
                let desired = desired.send(GetDesiredPods).await;
                let running = runtime.list_pods().await;
                (desired, running)
            }
            .into_actor(self)
            .map(|(desired, running), act, ctx| {
                let Ok(desired) = desired else {
                    warn!("no desired pods to rebuild from; waiting for the sync loop");
                    return;
                };
                let wanted: HashSet<String> = desired.pods.iter().map(|p| pod::uid(p).to_string()).collect();
                for p in desired.pods {
                    act.update(UpdatePodOptions::new(UpdateType::Create, p), ctx);
                }
                match running {
                    Ok(pods) if desired.all_sources_seen => {
                        for rp in pods {
                            if labels::owned_by(&rp, &act.deps.node_name) && !wanted.contains(&rp.pod.uid) {
                                info!(pod_uid = %rp.pod.uid, "runtime pod in no config: killing it");
                                act.update(UpdatePodOptions::runtime_kill(RuntimePod(rp)), ctx);
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(e) => warn!(error = %e, "cannot list the runtime while rebuilding; housekeeping will catch up"),
                }
            }),
        );
    }
}

impl Actor for PodWorkers {
    type Context = Context<Self>;
}

impl SupervisedActor for PodWorkers {
    const KIND: &'static str = "pod-workers";
    type Summary = DispatcherSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.me = Some(start.me.clone());
        self.worker_deps = Some(Arc::new(WorkerDeps {
            syncer: self.deps.syncer.clone(),
            cache: self.deps.cache.clone(),
            reinspect: self.deps.reinspect.clone(),
            done: start.me.recipient(),
            restarted: start.me.recipient(),
            status_wait: self.deps.status_wait,
        }));
        if start.is_restart() {
            info!(
                restarts = start.restarts,
                "pod workers restarted; rebuilding from desired pods and the runtime"
            );
        }
        self.rebuild_from_truth(ctx);
    }

    fn summary(&self) -> DispatcherSummary {
        DispatcherSummary {
            pods: self.state.len(),
            workers: self.workers.len(),
        }
    }
}

impl Handler<UpdatePod> for PodWorkers {
    type Result = ();
    fn handle(&mut self, UpdatePod(opts): UpdatePod, ctx: &mut Context<Self>) {
        self.update(opts, ctx);
    }
}

impl Handler<WorkDone> for PodWorkers {
    type Result = ();
    fn handle(&mut self, msg: WorkDone, _: &mut Context<Self>) {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if self.state.is_current_work(&msg.uid, msg.seq) {
            self.last_result_at.insert(msg.uid.clone(), now_ms);
        }
        let effects = self
            .state
            .work_done(&msg.uid, msg.seq, msg.result, Instant::now());
        self.apply(effects);
        self.publish(&msg.uid);
    }
}

impl Handler<WorkerRestarted> for PodWorkers {
    type Result = ();
    fn handle(&mut self, msg: WorkerRestarted, _: &mut Context<Self>) {
        let effects = self.state.worker_restarted(&msg.uid, Instant::now());
        self.apply(effects);
    }
}

impl Handler<SyncKnownPods> for PodWorkers {
    type Result = MessageResult<SyncKnownPods>;
    fn handle(
        &mut self,
        SyncKnownPods(desired): SyncKnownPods,
        _: &mut Context<Self>,
    ) -> Self::Result {
        let (states, effects) = self.state.sync_known_pods(&desired);
        self.apply(effects);
        MessageResult(states)
    }
}

impl Handler<DrainDue> for PodWorkers {
    type Result = MessageResult<DrainDue>;
    fn handle(&mut self, _: DrainDue, _: &mut Context<Self>) -> Self::Result {
        let (due, effects) = self.state.drain_due(Instant::now());
        self.apply(effects);
        MessageResult(due)
    }
}

impl Handler<CouldHaveRunningContainers> for PodWorkers {
    type Result = bool;
    fn handle(&mut self, msg: CouldHaveRunningContainers, _: &mut Context<Self>) -> bool {
        self.state.could_have_running_containers(&msg.0)
    }
}
