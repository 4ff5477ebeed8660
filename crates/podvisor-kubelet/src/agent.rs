//! The whole node agent as one actor tree: every kubelet actor, wired to the others, as
//! supervised children for the root supervisor. The binary adds configuration, the HTTP
//! endpoint and signals; tests build the same tree on the fake runtime.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use podvisor_actors::{ActorRef, ChildSpec, Registry, SupervisorConfig};
use podvisor_cri::Runtime;

use crate::groups::{PodWorkerWiring, pod_worker_group, status_group};
use crate::kuberuntime::config::NodeConfig;
use crate::kuberuntime::images::ImageManager;
use crate::kuberuntime::syncer::{CriSyncer, SyncerOutputs};
use crate::manifest_source::ManifestSource;
use crate::pleg::{PlegConfig, PlegHealth};
use crate::pod_workers::{PodWorkers, Timings};
use crate::status_manager::StatusManager;
use crate::sync_loop::{SyncLoop, SyncLoopConfig, SyncLoopDeps};

pub struct AgentParams {
    pub runtime: Arc<dyn Runtime>,
    pub node: NodeConfig,
    pub manifest_dir: PathBuf,
    pub manifest_rescan_period: Duration,
    /// Where statuses are kept across restarts.
    pub status_dir: PathBuf,
    pub pleg: PlegConfig,
    pub timings: Timings,
    pub sync_loop: SyncLoopConfig,
    pub supervision: SupervisorConfig,
    /// Longest a pod worker waits for fresh status before syncing with what is cached.
    pub status_wait: Duration,
}

/// The built tree: children for the root supervisor, in start order, and the handles the
/// binary and the tests talk to.
pub struct Agent {
    pub children: Vec<ChildSpec>,
    pub status_manager: ActorRef<StatusManager>,
    pub sync_loop: ActorRef<SyncLoop>,
    pub manifest_source: ActorRef<ManifestSource>,
    pub pod_workers: ActorRef<PodWorkers>,
    pub pleg_health: Arc<PlegHealth>,
    pub sources_ready: Arc<AtomicBool>,
}

/// Every source snapshot and PLEG event of every pod goes through the sync loop.
const SYNC_LOOP_CAPACITY: usize = 1 << 16;
const STATUS_MANAGER_CAPACITY: usize = 1 << 16;

pub fn build(registry: &Arc<Registry>, p: AgentParams) -> Agent {
    let runtime = p.runtime.clone();
    let (images, images_spec) = ChildSpec::of({
        let runtime = runtime.clone();
        move || ImageManager::new(runtime.clone())
    })
    .build();
    let status_dir = p.status_dir.clone();
    let (status_manager, status_spec) =
        ChildSpec::of(move || StatusManager::new(status_dir.clone()))
            .capacity(STATUS_MANAGER_CAPACITY)
            .build();

    // The sync loop and the pod workers name each other. The sync loop's handle exists as
    // soon as its spec is built; what it needs is filled in once everything else is
    // built, before anything starts.
    let deps: Arc<OnceLock<Arc<SyncLoopDeps>>> = Arc::default();
    let sync_config = SyncLoopConfig {
        node_name: p.node.node_name.clone(),
        ..p.sync_loop.clone()
    };
    let (sync_loop, sync_spec) = ChildSpec::of({
        let deps = deps.clone();
        move || {
            SyncLoop::new(
                deps.get().expect("wired before start").clone(),
                sync_config.clone(),
            )
        }
    })
    .capacity(SYNC_LOOP_CAPACITY)
    .build();

    let status = status_group(
        registry,
        runtime.clone(),
        vec![sync_loop.recipient()],
        p.pleg,
        p.supervision,
    );
    let syncer = Arc::new(CriSyncer::new(
        runtime.clone(),
        p.node.clone(),
        SyncerOutputs {
            images: images.recipient(),
            synced: status_manager.recipient(),
            terminated: status_manager.recipient(),
            events: status_manager.recipient(),
        },
    ));
    let workers = pod_worker_group(
        registry,
        PodWorkerWiring {
            syncer,
            runtime: runtime.clone(),
            cache: status.cache.recipient(),
            cache_get: status.cache.recipient(),
            reinspect: status.pleg.recipient(),
            desired: Some(sync_loop.recipient()),
            timings: p.timings,
            status_wait: p.status_wait,
            node_name: p.node.node_name.clone(),
        },
        p.supervision,
    );
    let (dir, node_name, period, sink, desired) = (
        p.manifest_dir.clone(),
        p.node.node_name.clone(),
        p.manifest_rescan_period,
        sync_loop.recipient(),
        sync_loop.recipient(),
    );
    let (manifest_source, manifest_spec) = ChildSpec::of(move || {
        ManifestSource::new(
            dir.clone(),
            node_name.clone(),
            period,
            sink.clone(),
            Some(desired.clone()),
        )
    })
    .build();

    let sources_ready = Arc::new(AtomicBool::new(false));
    let _ = deps.set(Arc::new(SyncLoopDeps {
        runtime,
        update: workers.dispatcher.recipient(),
        drain: workers.dispatcher.recipient(),
        known: workers.dispatcher.recipient(),
        rejected: status_manager.recipient(),
        forget: status_manager.recipient(),
        retain: status_manager.recipient(),
        phases: status_manager.recipient(),
        cache_delete: status.cache.recipient(),
        sources_ready: sources_ready.clone(),
        node: p.node.clone(),
        sources: vec![manifest_source.recipient()],
    }));

    Agent {
        // Start order: what others send to first, the sources last, so the first snapshot
        // finds everything running.
        children: vec![
            images_spec,
            status_spec,
            status.spec,
            workers.spec,
            sync_spec,
            manifest_spec,
        ],
        status_manager,
        sync_loop,
        manifest_source,
        pod_workers: workers.dispatcher,
        pleg_health: status.health,
        sources_ready,
    }
}
