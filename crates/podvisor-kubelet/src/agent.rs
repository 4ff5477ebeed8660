//! The whole kubelet as one actor tree: every kubelet actor, wired to the others, as
//! supervised children for the root supervisor. Every address is known before any child
//! is made: the actors that name each other are reserved first (`ChildSpec::reserve`),
//! and the ones outside the kubelet name ([`KubeletAddresses`]) are reserved by whoever
//! assembles the agent, before it builds its own side. The binary adds configuration, the
//! node's API side, the HTTP endpoints and signals.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use podvisor_actors::{ActorRef, ChildSpec, Recipient, Registry, Reserved, SupervisorConfig};
use podvisor_cri::Runtime;

use crate::eviction::{EvictionConfig, EvictionDeps, EvictionManager};
use crate::groups::{
    PodWorkerGroup, PodWorkerWiring, StatusGroup, StatusWiring, pod_worker_group, status_group,
};
use crate::image_gc::{ImageGc, ImageGcConfig};
use crate::kuberuntime::config::NodeConfig;
use crate::kuberuntime::images::ImageManager;
use crate::kuberuntime::syncer::{CriSyncer, SyncerOutputs};
use crate::log_rotation::{LogRotation, LogRotationConfig};
use crate::manifest_source::ManifestSource;
use crate::pleg::{PlegConfig, PlegHealth};
use crate::pod_workers::{PodWorkers, Timings};
use crate::prober::{Prober, ProberDeps};
use crate::protocol::eviction::{NodeEvent, NodePressure};
use crate::protocol::sources::{GetDesiredPods, Rescan, SourcePods};
use crate::protocol::status::{PriorStatuses, PublishedStatus};
use crate::stats::StatsCollector;
use crate::status_manager::StatusManager;
use crate::sync_loop::{SyncLoop, SyncLoopConfig, SyncLoopDeps};

pub struct AgentParams {
    pub runtime: Arc<dyn Runtime>,
    pub node: NodeConfig,
    pub manifest_dir: PathBuf,
    pub manifest_rescan_period: Duration,
    /// Where the statuses of before a (re)start are: the node's API (`None`: nowhere, as in
    /// tests without one).
    pub prior_statuses: Option<Recipient<PriorStatuses>>,
    pub pleg: PlegConfig,
    pub timings: Timings,
    pub sync_loop: SyncLoopConfig,
    pub supervision: SupervisorConfig,
    /// Longest a pod worker waits for fresh status before syncing with what is cached.
    pub status_wait: Duration,
    /// Config sources beyond the manifest directory (the node's API store), asked for a
    /// snapshot whenever the sync loop restarts. Their names go in `sync_loop.sources`.
    pub extra_sources: Vec<Recipient<Rescan>>,
    /// Told of every pod status change (written back to the API store).
    pub status_sink: Option<Recipient<PublishedStatus>>,
    /// Probes run at once, at most (`prober::DEFAULT_LIMITS`).
    pub probe_limits: podvisor_probe::Limits,
    pub log_rotation: LogRotationConfig,
    /// The kubelet's metrics (`metrics::KubeletMetrics`); the PLEG's ride in `pleg`.
    pub metrics: crate::metrics::Metrics,
    /// What pods' object volumes and environments are read from.
    pub objects: crate::kuberuntime::syncer::PodObjects,
    /// Node-pressure eviction; `None` when no threshold is set.
    pub eviction: Option<EvictionConfig>,
    pub image_gc: ImageGcConfig,
    /// Where events about the node itself go (`EvictionThresholdMet`, image removals).
    pub node_events: Option<Recipient<NodeEvent>>,
}

/// The built tree: children for the root supervisor, in start order, and the handles the
/// binary and the tests talk to.
pub struct Agent {
    pub children: Vec<ChildSpec>,
    pub status_manager: ActorRef<StatusManager>,
    pub sync_loop: ActorRef<SyncLoop>,
    pub manifest_source: ActorRef<ManifestSource>,
    pub pod_workers: ActorRef<PodWorkers>,
    pub prober: ActorRef<Prober>,
    pub pleg_health: Arc<PlegHealth>,
    pub sources_ready: Arc<AtomicBool>,
    /// What the node and its pods use (`/stats/summary`, `metrics.k8s.io`).
    pub stats: ActorRef<StatsCollector>,
    /// The node's pressure conditions, for the Node's status.
    pub pressure: NodePressure,
}

/// Every source snapshot and PLEG event of every pod goes through the sync loop.
const SYNC_LOOP_CAPACITY: usize = 1 << 16;
/// Every status the cache stores, and every sync's report and event, reach the status
/// manager.
const STATUS_MANAGER_CAPACITY: usize = 1 << 16;

/// The kubelet's actors that actors outside it name (the node's API pod source sends the
/// sync loop its snapshots; the status writer asks the status manager to publish again):
/// their addresses, reserved before either side is built.
pub struct KubeletAddresses {
    pub sync_loop: ActorRef<SyncLoop>,
    pub status_manager: ActorRef<StatusManager>,
    sync_loop_slot: Reserved<SyncLoop>,
    status_slot: Reserved<StatusManager>,
}

impl KubeletAddresses {
    pub fn reserve() -> Self {
        let (sync_loop, sync_loop_slot) = ChildSpec::reserve::<SyncLoop>()
            .capacity(SYNC_LOOP_CAPACITY)
            .open();
        let (status_manager, status_slot) = ChildSpec::reserve::<StatusManager>()
            .capacity(STATUS_MANAGER_CAPACITY)
            .open();
        Self {
            sync_loop,
            status_manager,
            sync_loop_slot,
            status_slot,
        }
    }
}

fn sync_loop_spec(p: &AgentParams, slot: Reserved<SyncLoop>, deps: SyncLoopDeps) -> ChildSpec {
    let config = SyncLoopConfig {
        node_name: p.node.node_name.clone(),
        ..p.sync_loop.clone()
    };
    let deps = Arc::new(deps);
    slot.with(move || SyncLoop::new(deps.clone(), config.clone()))
}

/// The handles the pod workers' syncs report to.
struct SyncTargets<'a> {
    images: &'a ActorRef<ImageManager>,
    statuses: &'a ActorRef<StatusManager>,
    prober: &'a ActorRef<Prober>,
}

fn pod_workers(
    p: &AgentParams,
    registry: &Arc<Registry>,
    status: &StatusGroup,
    to: &SyncTargets<'_>,
    desired: Recipient<GetDesiredPods>,
) -> PodWorkerGroup {
    let syncer = Arc::new(
        CriSyncer::new(
            p.runtime.clone(),
            p.node.clone(),
            SyncerOutputs {
                images: to.images.recipient(),
                synced: to.statuses.recipient(),
                terminated: to.statuses.recipient(),
                events: to.statuses.recipient(),
                probes: Some(to.prober.recipient()),
                probes_end: Some(to.prober.recipient()),
            },
        )
        .with_metrics(p.metrics.clone())
        .with_objects(p.objects.clone()),
    );
    let wiring = PodWorkerWiring {
        syncer,
        runtime: p.runtime.clone(),
        cache: status.cache.recipient(),
        cache_get: status.cache.recipient(),
        reinspect: status.pleg.recipient(),
        desired: Some(desired),
        events: Some(to.statuses.recipient()),
        timings: p.timings,
        status_wait: p.status_wait,
        node_name: p.node.node_name.clone(),
        metrics: p.metrics.clone(),
    };
    pod_worker_group(registry, wiring, p.supervision)
}

fn manifest_source(
    p: &AgentParams,
    sink: Recipient<SourcePods>,
    desired: Recipient<GetDesiredPods>,
) -> (ActorRef<ManifestSource>, ChildSpec) {
    let (dir, node, period) = (
        p.manifest_dir.clone(),
        p.node.node_name.clone(),
        p.manifest_rescan_period,
    );
    ChildSpec::of(move || {
        ManifestSource::new(
            dir.clone(),
            node.clone(),
            period,
            sink.clone(),
            Some(desired.clone()),
        )
    })
    .build()
}

fn status_manager_spec(
    p: &AgentParams,
    slot: Reserved<StatusManager>,
    prober: &ActorRef<Prober>,
) -> ChildSpec {
    let (prior, sink, resend) = (
        p.prior_statuses.clone(),
        p.status_sink.clone(),
        prober.recipient(),
    );
    let (metrics, host_ip) = (p.metrics.clone(), p.objects.host_ip.clone());
    slot.with(move || {
        StatusManager::new()
            .with_host_ip(host_ip.clone())
            .with_prior(prior.clone())
            .with_sink(sink.clone())
            .with_prober(Some(resend.clone()))
            .with_metrics(metrics.clone())
    })
}

fn prober_deps_of(
    p: &AgentParams,
    statuses: &ActorRef<StatusManager>,
    sync_loop: &ActorRef<SyncLoop>,
    status: &StatusGroup,
) -> Arc<ProberDeps> {
    Arc::new(ProberDeps {
        runtime: p.runtime.clone(),
        results: statuses.recipient(),
        events: statuses.recipient(),
        sync: sync_loop.recipient(),
        desired: sync_loop.recipient(),
        cache: status.cache.recipient(),
        limits: p.probe_limits,
        metrics: p.metrics.clone(),
    })
}

fn log_rotation_spec(p: &AgentParams) -> ChildSpec {
    let (runtime, node, logs) = (p.runtime.clone(), p.node.clone(), p.log_rotation);
    ChildSpec::of(move || LogRotation::new(runtime.clone(), node.clone(), logs))
        .build()
        .1
}

/// Every config source the sync loop asks for a snapshot: the manifest directory first.
fn sources(p: &AgentParams, manifests: &ActorRef<ManifestSource>) -> Vec<Recipient<Rescan>> {
    std::iter::once(manifests.recipient())
        .chain(p.extra_sources.iter().cloned())
        .collect()
}

fn stats_spec(p: &AgentParams) -> (ActorRef<StatsCollector>, ChildSpec) {
    let (runtime, node) = (p.runtime.clone(), p.node.node_name.clone());
    let paths = crate::stats::Paths {
        pods: p.node.pod_dir.clone(),
        logs: p.node.pod_log_dir.clone(),
    };
    ChildSpec::of(move || StatsCollector::new(runtime.clone(), node.clone(), paths.clone())).build()
}

/// The image garbage collector and, with thresholds, the eviction manager.
fn eviction_specs(
    p: &AgentParams,
    stats: &ActorRef<StatsCollector>,
    sync_loop: &ActorRef<SyncLoop>,
    pressure: &NodePressure,
) -> Vec<ChildSpec> {
    let (runtime, gc, events) = (p.runtime.clone(), p.image_gc.clone(), p.node_events.clone());
    let (images, images_spec) =
        ChildSpec::of(move || ImageGc::new(runtime.clone(), gc.clone(), events.clone())).build();
    let Some(config) = p.eviction.clone() else {
        return vec![images_spec];
    };
    let deps = Arc::new(EvictionDeps {
        runtime: p.runtime.clone(),
        node_name: p.node.node_name.clone(),
        node_stats: stats.recipient(),
        summary: stats.recipient(),
        pods: sync_loop.recipient(),
        evict: sync_loop.recipient(),
        images: images.recipient(),
        events: p.node_events.clone(),
        pressure: pressure.clone(),
    });
    let (_, manager) =
        ChildSpec::of(move || EvictionManager::new(deps.clone(), config.clone())).build();
    vec![images_spec, manager]
}

fn sync_loop_deps(
    p: &AgentParams,
    to: &SyncTargets<'_>,
    status: &StatusGroup,
    workers: &PodWorkerGroup,
    manifests: &ActorRef<ManifestSource>,
) -> SyncLoopDeps {
    SyncLoopDeps {
        runtime: p.runtime.clone(),
        update: workers.dispatcher.recipient(),
        known: workers.dispatcher.recipient(),
        rejected: to.statuses.recipient(),
        forget: to.statuses.recipient(),
        retain: to.statuses.recipient(),
        phases: to.statuses.recipient(),
        cache_delete: status.cache.recipient(),
        sources_ready: Arc::new(AtomicBool::new(false)),
        node: p.node.clone(),
        sources: sources(p, manifests),
        probes: Some(to.prober.recipient()),
        events: to.statuses.recipient(),
        pressure: NodePressure::default(),
    }
}

/// The kubelet's tree, with `addresses` (reserved by the caller) bound to their actors.
pub fn build(registry: &Arc<Registry>, p: AgentParams, addresses: KubeletAddresses) -> Agent {
    let KubeletAddresses {
        sync_loop,
        status_manager,
        sync_loop_slot,
        status_slot,
    } = addresses;
    let (prober, prober_slot) = ChildSpec::reserve::<Prober>().open();
    let runtime = p.runtime.clone();
    let (images, images_spec) = ChildSpec::of(move || ImageManager::new(runtime.clone())).build();
    let (stats, stats_spec) = stats_spec(&p);
    let wiring = StatusWiring {
        runtime: p.runtime.clone(),
        events: vec![sync_loop.recipient()],
        statuses: vec![status_manager.recipient(), prober.recipient()],
        pleg: p.pleg.clone(),
    };
    let status = status_group(registry, wiring, p.supervision);
    let targets = SyncTargets {
        images: &images,
        statuses: &status_manager,
        prober: &prober,
    };
    let workers = pod_workers(&p, registry, &status, &targets, sync_loop.recipient());
    let (manifest_source, manifest_spec) =
        manifest_source(&p, sync_loop.recipient(), sync_loop.recipient());
    let deps = sync_loop_deps(&p, &targets, &status, &workers, &manifest_source);
    let sources_ready = deps.sources_ready.clone();
    let pressure = deps.pressure.clone();
    let eviction = eviction_specs(&p, &stats, &sync_loop, &pressure);
    let prober_deps = prober_deps_of(&p, &status_manager, &sync_loop, &status);
    Agent {
        // Start order: what others send to first, the sources last, so the first snapshot
        // finds everything running.
        children: vec![
            images_spec,
            status_manager_spec(&p, status_slot, &prober),
            status.spec,
            prober_slot.with(move || Prober::new(prober_deps.clone())),
            workers.spec,
            sync_loop_spec(&p, sync_loop_slot, deps),
            manifest_spec,
            log_rotation_spec(&p),
            stats_spec,
        ]
        .into_iter()
        .chain(eviction)
        .collect(),
        status_manager,
        sync_loop,
        manifest_source,
        pod_workers: workers.dispatcher,
        prober,
        pleg_health: status.health,
        sources_ready,
        stats,
        pressure,
    }
}
