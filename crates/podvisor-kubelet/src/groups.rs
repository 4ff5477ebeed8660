//! The supervision groups the agent is built from, wired the same way in the agent and in
//! tests (see ARCHITECTURE.md, "Which strategy where").

use std::sync::Arc;

use podvisor_actors::{
    ActorRef, ChildSpec, Recipient, Registry, Strategy, Supervisor, SupervisorConfig,
};
use podvisor_cri::Runtime;

use crate::pleg::{CacheHandle, Pleg, PlegConfig, PlegHealth, PodLifecycleEvent};
use crate::status_cache::StatusCache;

/// Room for a full relist's worth of status updates (one per pod) plus its waiters.
const CACHE_CAPACITY: usize = 16 * 1024;

/// The status cache and the PLEG under one rest-for-one supervisor: a restarted cache is
/// empty, so the PLEG restarts after it and its first relist inspects every pod.
pub struct StatusGroup {
    pub cache: ActorRef<StatusCache>,
    pub pleg: ActorRef<Pleg>,
    pub health: Arc<PlegHealth>,
    pub spec: ChildSpec,
}

pub fn status_group(
    registry: &Arc<Registry>,
    runtime: Arc<dyn Runtime>,
    subscribers: Vec<Recipient<PodLifecycleEvent>>,
    config: PlegConfig,
    supervision: SupervisorConfig,
) -> StatusGroup {
    let health = Arc::new(PlegHealth::new(config.health_threshold));
    let (cache, cache_spec) = ChildSpec::of(StatusCache::default)
        .capacity(CACHE_CAPACITY)
        .build();
    let handle = CacheHandle {
        set: cache.recipient(),
        update_time: cache.recipient(),
    };
    let h = health.clone();
    let (pleg, pleg_spec) = ChildSpec::of(move || {
        Pleg::new(
            runtime.clone(),
            handle.clone(),
            subscribers.clone(),
            config.clone(),
            h.clone(),
        )
    })
    .build();
    let (_, spec) = Supervisor::spec(
        "status",
        SupervisorConfig {
            strategy: Strategy::RestForOne,
            ..supervision
        },
        registry.clone(),
        vec![cache_spec, pleg_spec],
    );
    StatusGroup {
        cache,
        pleg,
        health,
        spec,
    }
}
