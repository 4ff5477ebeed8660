//! The supervision groups the agent is built from, wired the same way in the agent and in
//! tests (see ARCHITECTURE.md, "Actors and supervision").

use std::sync::Arc;

use podvisor_actors::{
    ActorRef, ChildSpec, Recipient, Registry, Scope, Strategy, Supervisor, SupervisorConfig,
};
use podvisor_cri::Runtime;

use crate::pleg::{CacheHandle, Pleg, PlegConfig, PlegHealth};
use crate::pod_workers::{PodWorkers, PodWorkersDeps, Timings};
use crate::protocol::cache::{GetNewerThan, GetStatus, StatusChanged};
use crate::protocol::lifecycle::{PodLifecycleEvent, Reinspect};
use crate::protocol::sources::GetDesiredPods;
use crate::protocol::status::RecordEvent;
use crate::protocol::sync::PodSyncer;
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

/// What the status group is wired to.
pub struct StatusWiring {
    pub runtime: Arc<dyn Runtime>,
    /// Who gets the PLEG's lifecycle events (the sync loop).
    pub events: Vec<Recipient<PodLifecycleEvent>>,
    /// Who follows every status the cache stores (the status manager).
    pub statuses: Vec<Recipient<StatusChanged>>,
    pub pleg: PlegConfig,
}

pub fn status_group(
    registry: &Arc<Registry>,
    wiring: StatusWiring,
    supervision: SupervisorConfig,
) -> StatusGroup {
    let StatusWiring {
        runtime,
        events: subscribers,
        statuses,
        pleg: config,
    } = wiring;
    let health = Arc::new(PlegHealth::new(config.health_threshold));
    let (cache, cache_spec) = ChildSpec::of(move || StatusCache::new(statuses.clone()))
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

/// The pod-workers dispatcher and the supervisor of its workers, one-for-all: when either
/// restarts, both do, and the dispatcher recreates every worker from desired state plus
/// the runtime; a crashing worker is restarted alone, under the workers' supervisor.
pub struct PodWorkerGroup {
    pub dispatcher: ActorRef<PodWorkers>,
    pub spec: ChildSpec,
}

/// What the pod-worker group is wired to.
pub struct PodWorkerWiring {
    pub syncer: Arc<dyn PodSyncer>,
    pub runtime: Arc<dyn Runtime>,
    pub cache: Recipient<GetNewerThan>,
    pub cache_get: Recipient<GetStatus>,
    pub reinspect: Recipient<Reinspect>,
    pub desired: Option<Recipient<GetDesiredPods>>,
    pub events: Option<Recipient<RecordEvent>>,
    pub timings: Timings,
    pub status_wait: std::time::Duration,
    pub node_name: String,
    pub metrics: crate::metrics::Metrics,
}

/// Enough room for a burst of pod creations (one `StartChild` each).
const WORKERS_SUPERVISOR_CAPACITY: usize = 1 << 16;
/// Every update, report and query of every pod goes through the dispatcher.
const DISPATCHER_CAPACITY: usize = 1 << 16;

pub fn pod_worker_group(
    registry: &Arc<Registry>,
    wiring: PodWorkerWiring,
    supervision: SupervisorConfig,
) -> PodWorkerGroup {
    let (workers, workers_spec) = ChildSpec::of({
        let registry = registry.clone();
        move || {
            Supervisor::new(
                "pod-workers",
                // Pods are independent: one whose worker keeps crashing is held back
                // alone instead of taking the agent down with it.
                SupervisorConfig {
                    strategy: Strategy::OneForOne,
                    scope: Scope::EachChild {
                        max: crate::pod_workers::POD_WORKER_BACKOFF_MAX,
                    },
                    ..supervision
                },
                registry.clone(),
                Vec::new(),
            )
        }
    })
    .key("pod-workers")
    .capacity(WORKERS_SUPERVISOR_CAPACITY)
    .build();
    let deps = Arc::new(PodWorkersDeps {
        syncer: wiring.syncer,
        runtime: wiring.runtime,
        cache: wiring.cache,
        cache_get: wiring.cache_get,
        reinspect: wiring.reinspect,
        start_worker: workers.recipient(),
        stop_worker: workers.recipient(),
        desired: wiring.desired,
        events: wiring.events,
        timings: wiring.timings,
        status_wait: wiring.status_wait,
        node_name: wiring.node_name,
        metrics: wiring.metrics,
    });
    let (dispatcher, dispatcher_spec) = ChildSpec::of(move || PodWorkers::new(deps.clone()))
        .capacity(DISPATCHER_CAPACITY)
        .build();
    // One for all: the dispatcher holds every worker's handle and its pod's state, and the
    // workers' supervisor takes every worker with it when it goes: the dispatcher restarts
    // too and starts a worker for every pod it rebuilds from the desired pods and the
    // runtime (never handing work to workers that are gone).
    let (_, spec) = Supervisor::spec(
        "pod-worker-group",
        SupervisorConfig {
            strategy: Strategy::OneForAll,
            ..supervision
        },
        registry.clone(),
        vec![dispatcher_spec, workers_spec],
    );
    PodWorkerGroup { dispatcher, spec }
}
