//! The whole node agent as one actor tree: every kubelet actor, wired to the others, as
//! supervised children for the root supervisor. The binary adds configuration, the HTTP
//! endpoint and signals; tests build the same tree on the fake runtime.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use podvisor_actors::{ActorRef, ChildSpec, Recipient, Registry, SupervisorConfig};
use podvisor_cri::Runtime;

use crate::groups::{
    PodWorkerGroup, PodWorkerWiring, StatusGroup, StatusWiring, pod_worker_group, status_group,
};
use crate::kuberuntime::config::NodeConfig;
use crate::kuberuntime::images::ImageManager;
use crate::kuberuntime::syncer::{CriSyncer, SyncerOutputs};
use crate::log_rotation::{LogRotation, LogRotationConfig};
use crate::manifest_source::ManifestSource;
use crate::pleg::{PlegConfig, PlegHealth};
use crate::pod_workers::{PodWorkers, Timings};
use crate::prober::{Prober, ProberDeps};
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
}

/// Every source snapshot and PLEG event of every pod goes through the sync loop.
const SYNC_LOOP_CAPACITY: usize = 1 << 16;
/// Every status the cache stores, and every sync's report and event, reach the status
/// manager.
const STATUS_MANAGER_CAPACITY: usize = 1 << 16;

/// The sync loop's handle exists as soon as its spec is built; what it needs is filled in
/// once everything else is built, before anything starts (it and the pod workers name
/// each other).
type LateDeps = Arc<OnceLock<Arc<SyncLoopDeps>>>;

fn sync_loop_spec(p: &AgentParams, deps: LateDeps) -> (ActorRef<SyncLoop>, ChildSpec) {
    let config = SyncLoopConfig {
        node_name: p.node.node_name.clone(),
        ..p.sync_loop.clone()
    };
    ChildSpec::of(move || {
        SyncLoop::new(
            deps.get().expect("wired before start").clone(),
            config.clone(),
        )
    })
    .capacity(SYNC_LOOP_CAPACITY)
    .build()
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
    to: SyncTargets<'_>,
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
        .with_metrics(p.metrics.clone()),
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

/// The prober's handle exists before what it talks to is built (the status cache); its
/// deps are filled in before anything starts, like the sync loop's.
type LateProber = Arc<OnceLock<Arc<ProberDeps>>>;

fn prober_spec() -> (ActorRef<Prober>, ChildSpec, LateProber) {
    let deps: LateProber = Arc::default();
    let late = deps.clone();
    let (prober, spec) =
        ChildSpec::of(move || Prober::new(late.get().expect("wired before start").clone())).build();
    (prober, spec, deps)
}

fn status_manager_spec(
    p: &AgentParams,
    prober: &ActorRef<Prober>,
) -> (ActorRef<StatusManager>, ChildSpec) {
    let (prior, sink, resend) = (
        p.prior_statuses.clone(),
        p.status_sink.clone(),
        prober.recipient(),
    );
    let metrics = p.metrics.clone();
    ChildSpec::of(move || {
        StatusManager::new()
            .with_prior(prior.clone())
            .with_sink(sink.clone())
            .with_prober(Some(resend.clone()))
            .with_metrics(metrics.clone())
    })
    .capacity(STATUS_MANAGER_CAPACITY)
    .build()
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
    ChildSpec::of(move || StatsCollector::new(runtime.clone(), node.clone())).build()
}

pub fn build(registry: &Arc<Registry>, p: AgentParams) -> Agent {
    let runtime = p.runtime.clone();
    let (images, images_spec) = ChildSpec::of(move || ImageManager::new(runtime.clone())).build();
    let rotation_spec = log_rotation_spec(&p);
    let (stats, stats_spec) = stats_spec(&p);
    let (prober, prober_spec, prober_deps) = prober_spec();
    let (status_manager, status_spec) = status_manager_spec(&p, &prober);
    let deps: LateDeps = Arc::default();
    let (sync_loop, sync_spec) = sync_loop_spec(&p, deps.clone());
    let wiring = StatusWiring {
        runtime: p.runtime.clone(),
        events: vec![sync_loop.recipient()],
        statuses: vec![status_manager.recipient(), prober.recipient()],
        pleg: p.pleg.clone(),
    };
    let status = status_group(registry, wiring, p.supervision);
    let sources_ready = Arc::new(AtomicBool::new(false));
    let _ = prober_deps.set(prober_deps_of(&p, &status_manager, &sync_loop, &status));
    let targets = SyncTargets {
        images: &images,
        statuses: &status_manager,
        prober: &prober,
    };
    let workers = pod_workers(&p, registry, &status, targets, sync_loop.recipient());
    let (manifest_source, manifest_spec) =
        manifest_source(&p, sync_loop.recipient(), sync_loop.recipient());
    let _ = deps.set(Arc::new(SyncLoopDeps {
        runtime: p.runtime.clone(),
        update: workers.dispatcher.recipient(),
        known: workers.dispatcher.recipient(),
        rejected: status_manager.recipient(),
        forget: status_manager.recipient(),
        retain: status_manager.recipient(),
        phases: status_manager.recipient(),
        cache_delete: status.cache.recipient(),
        sources_ready: sources_ready.clone(),
        node: p.node.clone(),
        sources: sources(&p, &manifest_source),
        probes: Some(prober.recipient()),
    }));
    Agent {
        // Start order: what others send to first, the sources last, so the first snapshot
        // finds everything running.
        children: vec![
            images_spec,
            status_spec,
            status.spec,
            prober_spec,
            workers.spec,
            sync_spec,
            manifest_spec,
            rotation_spec,
            stats_spec,
        ],
        status_manager,
        sync_loop,
        manifest_source,
        pod_workers: workers.dispatcher,
        prober,
        pleg_health: status.health,
        sources_ready,
        stats,
    }
}
