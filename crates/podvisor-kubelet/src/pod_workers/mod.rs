//! The pod workers: a dispatcher actor that owns every pod's lifecycle state (the
//! kubelet's `podWorkers`), and one worker actor per pod UID that runs its syncs.
//!
//! The dispatcher decides (in `state.rs`, plain data) whether each update sets a pod up,
//! tears it down or cleans up after it, keeps only the newest undelivered update per pod,
//! cancels a sync that a termination makes pointless, and hands work to the pod's worker
//! only when it is idle, so each pod has at most one sync in flight. It also owns when each
//! pod is looked at again (resync after a success, retry after a failure): one delay queue
//! with a deadline per pod, and nothing runs while nothing is due.
//!
//! Restarts: a restarted worker asks for its pod's newest update (the work it was running
//! died with it). A restarted dispatcher starts with no state; it asks its desired-pods
//! source for the pods that should run and lists the runtime, updates every desired pod
//! (its first sync adopts what runs) and, once the source has heard from every config
//! source, kills the podvisor pods in the runtime that nobody wants. A restart alone kills
//! nothing: the dispatcher shares a rest-for-one group with the workers' supervisor, so
//! its workers restart with it and are recreated from that rebuild.

mod lifecycle;
mod rebuild;
mod reports;
mod state;
mod static_gate;
mod status;
mod summary;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::due::{self, DueQueue};
use podvisor_actors::{
    ActorRef, ChildSpec, Recipient, Restart, SendError, StartChild, StartInfo, StopChild,
    SupervisedActor,
};
use podvisor_core::PodUid;
use podvisor_cri::Runtime;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

#[cfg(test)]
use lifecycle::Cause;
pub use state::Timings;
pub(crate) use state::{Effect, PodWorkersState};
#[cfg(test)]
use status::PodSyncStatus;
pub use summary::{DispatcherSummary, WorkerSummary};
pub use worker::PodWorker;
pub(crate) use worker::{WorkerDeps, still_running};

#[cfg(test)]
#[path = "state_tests.rs"]
mod state_tests;

use crate::protocol::cache::{GetNewerThan, GetStatus};
use crate::protocol::lifecycle::Reinspect;
use crate::protocol::sources::GetDesiredPods;
use crate::protocol::status::{EventType, RecordEvent};
use crate::protocol::sync::PodSyncer;
use crate::protocol::updates::{SyncKnownPods, UpdatePod, UpdatePodOptions};
use crate::protocol::work::{Undelivered, Work, WorkDone, WorkResult, WorkerRestarted};

/// How long a pod worker that crashes too often (more than the intensity allows, counted
/// for it alone) may be held back between restarts: the kubelet's crash-loop cap.
pub const POD_WORKER_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(300);

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
    /// Where a worker's crash is told as the pod's event; `None` in tests of the
    /// dispatcher alone.
    pub events: Option<Recipient<RecordEvent>>,
    pub timings: Timings,
    pub status_wait: Duration,
    /// Runtime pods labelled with this node are the agent's own (see `labels::owned_by`).
    pub node_name: String,
    /// `kubelet_pod_worker_duration_seconds`, observed as each work ends.
    pub metrics: crate::metrics::Metrics,
}

/// Mailbox capacity of one pod worker: the dispatcher sends it one work item at a time.
const WORKER_CAPACITY: usize = 4;

pub struct PodWorkers {
    deps: Arc<PodWorkersDeps>,
    state: PodWorkersState,
    /// When each pod is looked at again.
    due: DueQueue<PodUid>,
    worker_deps: Option<Arc<WorkerDeps>>,
    workers: HashMap<PodUid, ActorRef<PodWorker>>,
    cancels: HashMap<PodUid, CancellationToken>,
    /// Wall-clock time of each pod's last sync result, for the debug view.
    last_result_at: HashMap<PodUid, u64>,
}

impl PodWorkers {
    pub fn new(deps: Arc<PodWorkersDeps>) -> Self {
        Self {
            state: PodWorkersState::new(deps.timings),
            deps,
            due: DueQueue::new(),
            worker_deps: None,
            workers: HashMap::new(),
            cancels: HashMap::new(),
            last_result_at: HashMap::new(),
        }
    }

    fn worker(&mut self, uid: &PodUid) -> Result<ActorRef<PodWorker>, Undelivered> {
        if let Some(w) = self.workers.get(uid) {
            return Ok(w.clone());
        }
        let deps = self.worker_deps.clone().ok_or(Undelivered::NoWorker)?;
        let u = uid.clone();
        let (worker, spec) = ChildSpec::of(move || PodWorker::new(u.clone(), deps.clone()))
            .key(uid.as_str())
            .capacity(WORKER_CAPACITY)
            .restart(Restart::Transient)
            .build();
        if let Err(e) = self.deps.start_worker.try_send(StartChild(spec)) {
            warn!(pod_uid = %uid, error = ?e, "cannot start a pod worker");
            return Err(Undelivered::NoWorker);
        }
        self.workers.insert(uid.clone(), worker.clone());
        Ok(worker)
    }

    fn send_work(&mut self, work: crate::protocol::work::PodWork) -> Result<(), Undelivered> {
        let uid = work.pod.uid().clone();
        let token = CancellationToken::new();
        let worker = self.worker(&uid)?;
        match worker.try_send(Work(work, token.clone())) {
            Ok(()) => {
                self.cancels.insert(uid, token);
                Ok(())
            }
            Err(SendError::Closed(_)) => {
                // Gone for good: the next delivery starts a new one.
                self.workers.remove(&uid);
                Err(Undelivered::WorkerGone)
            }
            Err(SendError::Full(_)) => Err(Undelivered::MailboxFull),
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Deliver(work) => {
                    let (uid, seq) = (work.pod.uid().clone(), work.seq);
                    match self.send_work(work) {
                        Ok(()) => self.publish(&uid),
                        // Undelivered work is failed work: backed off and tried again,
                        // never left marked as running with nobody running it.
                        Err(why) => {
                            warn!(pod_uid = %uid, reason = %why, "pod work not delivered; retrying after the backoff");
                            let result = WorkResult::failed(why);
                            let effects = self.state.work_done(&uid, seq, result, Instant::now());
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
                Effect::StopWorker(uid) => self.stop_worker(&uid),
                Effect::Schedule(uid, at) => self.due.schedule(uid, at),
                Effect::Unschedule(uid) => {
                    self.due.cancel(&uid);
                }
            }
        }
    }

    fn stop_worker(&mut self, uid: &PodUid) {
        self.cancels.remove(uid);
        self.last_result_at.remove(uid);
        if let Some(w) = self.workers.remove(uid) {
            self.publish_for(uid, &w);
            self.deps.stop_worker.do_send(StopChild(w.id().clone()));
        }
    }

    fn publish(&self, uid: &PodUid) {
        if let Some(w) = self.workers.get(uid) {
            self.publish_for(uid, w);
        }
    }

    fn publish_for(&self, uid: &PodUid, worker: &ActorRef<PodWorker>) {
        if let Some(s) = self.state.status(uid) {
            let at = self.last_result_at.get(uid).copied();
            worker.annotate(WorkerSummary::of(s, at));
        }
    }

    fn update(&mut self, opts: UpdatePodOptions, ctx: &mut Context<Self>) {
        let Some(uid) = opts.uid().cloned() else {
            let effects = self.state.update_pod(opts, None, Instant::now());
            return self.apply(effects);
        };
        if !self.state.needs_cached_status(&opts) {
            let effects = self.state.update_pod(opts, None, Instant::now());
            self.apply(effects);
            // A queued update or a restart request changes what the snapshot shows even
            // when nothing is delivered.
            return self.publish(&uid);
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

    fn on_due(&mut self, uid: PodUid, _: Instant, _: &mut Context<Self>) {
        let effects = self.state.resync_due(&uid, Instant::now());
        self.apply(effects);
    }
}

impl Actor for PodWorkers {
    type Context = Context<Self>;
}

impl SupervisedActor for PodWorkers {
    const KIND: &'static str = "pod-workers";
    type Summary = DispatcherSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.worker_deps = Some(Arc::new(WorkerDeps {
            syncer: self.deps.syncer.clone(),
            cache: self.deps.cache.clone(),
            reinspect: self.deps.reinspect.clone(),
            done: start.me.recipient(),
            restarted: start.me.recipient(),
            status_wait: self.deps.status_wait,
        }));
        due::drive(ctx, |a: &mut Self| &mut a.due, Self::on_due);
        if start.is_restart() {
            tracing::info!(
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
            scheduled: self.due.len(),
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
        if let Some((operation, started)) = self.state.current_work(&msg.uid, msg.seq) {
            self.last_result_at
                .insert(msg.uid.clone(), podvisor_core::time::now_unix_ms());
            if let Some(t) = started {
                self.deps
                    .metrics
                    .pod_worker
                    .with_label_values(&[operation])
                    .observe(t.elapsed().as_secs_f64());
            }
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
        if let (Some(events), Some(pod)) = (&self.deps.events, self.state.pod(&msg.uid)) {
            events.do_send(RecordEvent {
                pod,
                kind: EventType::Warning,
                reason: "WorkerCrashed",
                message: format!(
                    "podvisor's worker for this pod crashed and was restarted ({} restarts); it backs off alone, up to {}s between restarts, while other pods go on",
                    msg.restarts,
                    POD_WORKER_BACKOFF_MAX.as_secs()
                ),
            });
        }
        let effects = self.state.worker_restarted(&msg.uid, Instant::now());
        self.apply(effects);
        // The crashed instance's summary went with it; the pod's state is still here.
        self.publish(&msg.uid);
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
