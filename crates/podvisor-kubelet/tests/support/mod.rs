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
use podvisor_kubelet::pleg::{Pleg, PlegConfig, PlegEventKind, PlegHealth, PodLifecycleEvent};
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
        Arc::new(fake.clone()),
        vec![collector.recipient()],
        config,
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
    let sb = sandbox_config(uid, uid, false, "/logs");
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
