//! Test wiring for the kubelet actors on the fake runtime: a paused-time actix system, an
//! event collector standing in for the sync loop, and the status group (cache, PLEG)
//! under a rest-for-one supervisor as in the agent.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::testing::{Collected, collector};
use podvisor_actors::{ActorRef, Registry, SupervisorConfig, start_root};
use podvisor_cri::sample::{container_config, sandbox_config};
use podvisor_cri::{FakeRuntime, Runtime};
use podvisor_kubelet::groups::StatusWiring;
use podvisor_kubelet::pleg::{Pleg, PlegConfig, PlegHealth};
use podvisor_kubelet::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};
use podvisor_kubelet::status_cache::StatusCache;

pub use podvisor_actors::testing::{paused_system, until};

/// Lifecycle events as the sync loop would receive them.
#[derive(Clone, Default)]
pub struct Events(pub Collected<PodLifecycleEvent>);

impl Events {
    pub fn take(&self) -> Vec<(PlegEventKind, String)> {
        self.0
            .take()
            .into_iter()
            .map(|e| (e.kind, e.container))
            .collect()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

pub struct Harness {
    pub fake: FakeRuntime,
    pub registry: Arc<Registry>,
    pub cache: ActorRef<StatusCache>,
    pub pleg: ActorRef<Pleg>,
    pub events: Events,
    pub health: Arc<PlegHealth>,
}

/// A relist period no test reaches by accident: tests relist with `RelistNow`.
pub fn manual() -> PlegConfig {
    PlegConfig {
        mode: podvisor_kubelet::pleg::PlegMode::Relist,
        relist_period: Duration::from_secs(3600),
        ..PlegConfig::default()
    }
}

pub fn harness(fake: FakeRuntime, config: PlegConfig) -> Harness {
    let registry = Registry::new();
    let (collector, collector_spec, seen) = collector::<PodLifecycleEvent>();
    let events = Events(seen);
    let group = podvisor_kubelet::groups::status_group(
        &registry,
        StatusWiring {
            runtime: Arc::new(fake.clone()),
            events: vec![collector.recipient()],
            statuses: Vec::new(),
            pleg: config,
        },
        SupervisorConfig::default(),
    );
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![collector_spec, group.spec],
        |e| panic!("escalated: {e:?}"),
    );
    Harness {
        fake,
        registry,
        cache: group.cache,
        pleg: group.pleg,
        events,
        health: group.health,
    }
}

/// Starts pod `uid` in the fake with the named containers; returns their ids.
pub async fn start_pod(
    fake: &FakeRuntime,
    uid: &str,
    containers: &[&str],
) -> (String, Vec<String>) {
    start_pod_of(fake, None, uid, containers).await
}

/// `start_pod`, labelled as node `node`'s pod (`podvisor.io/managed-by`) when given.
pub async fn start_pod_of(
    fake: &FakeRuntime,
    node: Option<&str>,
    uid: &str,
    containers: &[&str],
) -> (String, Vec<String>) {
    let mut sb = sandbox_config(uid, uid, false, "/logs");
    if let Some(node) = node {
        sb.labels
            .insert(podvisor_cri::labels::MANAGED_BY.into(), node.into());
    }
    let sandbox = fake.run_sandbox(&sb).await.unwrap();
    let mut ids = Vec::new();
    for name in containers {
        let id = fake
            .create_container(&sandbox, &container_config(&sb, name, &["x"]), &sb)
            .await
            .unwrap();
        fake.start_container(&id).await.unwrap();
        ids.push(id);
    }
    (sandbox, ids)
}

// ---- pod workers ---------------------------------------------------------------------------

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use podvisor_core::SharedPod;
use podvisor_kubelet::protocol::cache::ContainerId;
use podvisor_kubelet::protocol::sync::SyncOutcome;
use podvisor_kubelet::protocol::sync::{PodSyncer, SyncContext, SyncError, Termination};
use podvisor_kubelet::protocol::updates::UpdateType;
use podvisor_kubelet::protocol::work::WorkKind;

/// One call of a sync function, as the fake syncer saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncCall {
    pub uid: String,
    pub kind: WorkKind,
    pub update: Option<UpdateType>,
    pub grace: Option<i64>,
    /// Containers in the status the worker handed over.
    pub containers_seen: usize,
    pub runtime_only: bool,
}

#[derive(Default)]
struct SyncerState {
    calls: Vec<SyncCall>,
    block: HashSet<String>,
    fail: HashMap<String, usize>,
}

/// Records every call; can block a pod's `sync_pod` until cancelled, fail a pod's next
/// syncs, and (given a fake runtime) start one container for a pod that has none, so the
/// next sync sees the change.
#[derive(Clone, Default)]
pub struct FakeSyncer {
    state: Arc<Mutex<SyncerState>>,
    runtime: Option<FakeRuntime>,
}

impl FakeSyncer {
    pub fn with_runtime(runtime: FakeRuntime) -> Self {
        Self {
            runtime: Some(runtime),
            ..Default::default()
        }
    }
    pub fn calls(&self) -> Vec<SyncCall> {
        self.state.lock().unwrap().calls.clone()
    }
    pub fn calls_for(&self, uid: &str) -> Vec<SyncCall> {
        self.calls().into_iter().filter(|c| c.uid == uid).collect()
    }
    pub fn kinds_for(&self, uid: &str) -> Vec<WorkKind> {
        self.calls_for(uid).into_iter().map(|c| c.kind).collect()
    }
    pub fn block(&self, uid: &str) {
        self.state.lock().unwrap().block.insert(uid.into());
    }
    pub fn unblock(&self, uid: &str) {
        self.state.lock().unwrap().block.remove(uid);
    }
    pub fn fail_next(&self, uid: &str, times: usize) {
        self.state.lock().unwrap().fail.insert(uid.into(), times);
    }
    fn record(&self, call: SyncCall) -> Result<(), SyncError> {
        let mut s = self.state.lock().unwrap();
        let uid = call.uid.clone();
        s.calls.push(call);
        match s.fail.get_mut(&uid) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Err(SyncError::Other("injected failure".into()))
            }
            _ => Ok(()),
        }
    }
    fn blocked(&self, uid: &str) -> bool {
        self.state.lock().unwrap().block.contains(uid)
    }
}

#[async_trait]
impl PodSyncer for FakeSyncer {
    async fn sync_pod(
        &self,
        ctx: &SyncContext,
        update: UpdateType,
        _pod: &SharedPod,
        status: &Arc<podvisor_cri::PodStatus>,
    ) -> Result<SyncOutcome, SyncError> {
        self.record(SyncCall {
            uid: ctx.uid.to_string(),
            kind: WorkKind::Sync,
            update: Some(update),
            grace: None,
            containers_seen: status.containers.len(),
            runtime_only: false,
        })?;
        while self.blocked(&ctx.uid) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut outcome = SyncOutcome::default();
        if let (Some(rt), true) = (&self.runtime, status.sandboxes.is_empty()) {
            let sb = sandbox_config(&ctx.uid, &ctx.uid, false, "/logs");
            let id = rt.run_sandbox(&sb).await?;
            let c = rt
                .create_container(&id, &container_config(&sb, "app", &["x"]), &sb)
                .await?;
            rt.start_container(&c).await?;
            outcome.changed = true;
            outcome.last_started = Some(ContainerId(c));
        }
        Ok(outcome)
    }

    async fn sync_terminating_pod(
        &self,
        ctx: &SyncContext,
        _pod: &SharedPod,
        status: &Arc<podvisor_cri::PodStatus>,
        t: Termination<'_>,
    ) -> Result<(), SyncError> {
        self.record(SyncCall {
            uid: ctx.uid.to_string(),
            kind: WorkKind::Terminating,
            update: None,
            grace: Some(t.grace.seconds()),
            containers_seen: status.containers.len(),
            runtime_only: t.running_pod.is_some(),
        })
    }

    async fn sync_terminated_pod(
        &self,
        ctx: &SyncContext,
        _pod: &SharedPod,
        status: &Arc<podvisor_cri::PodStatus>,
    ) -> Result<(), SyncError> {
        self.record(SyncCall {
            uid: ctx.uid.to_string(),
            kind: WorkKind::Terminated,
            update: None,
            grace: None,
            containers_seen: status.containers.len(),
            runtime_only: false,
        })
    }
}

/// Stands in for the sync loop as the source of desired pods.
use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_kubelet::protocol::sources::{DesiredPods, GetDesiredPods};

pub struct Desired(pub Arc<Mutex<Vec<SharedPod>>>);

impl Actor for Desired {
    type Context = Context<Self>;
}

impl SupervisedActor for Desired {
    const KIND: &'static str = "desired";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

impl Handler<GetDesiredPods> for Desired {
    type Result = MessageResult<GetDesiredPods>;
    fn handle(&mut self, _: GetDesiredPods, _: &mut Context<Self>) -> Self::Result {
        MessageResult(DesiredPods {
            pods: self.0.lock().unwrap().clone(),
            all_sources_seen: true,
        })
    }
}
