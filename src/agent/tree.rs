//! One place assembles the agent: the whole supervision tree, from the typed config. The
//! actors that the kubelet's side and the node's API side name across the boundary are
//! reserved first (their addresses exist before any child is made), then each side is
//! built, then the children are put in start order: what others write to first, the
//! sources and controllers last.

use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::{ActorRef, ChildSpec, Registry};
use podvisor_auth::LocalTokens;
use podvisor_client::Client;
use podvisor_cluster::{ClusterServices, ClusterTokens};
use podvisor_cri::Runtime;
use podvisor_kubelet::agent::{Agent, AgentParams, KubeletAddresses};
use podvisor_kubelet::kuberuntime::config::{NodeConfig, read_dns};
use podvisor_kubelet::kuberuntime::pod_cgroups::PodCgroups;
use podvisor_kubelet::kuberuntime::syncer::PodObjects;
use podvisor_kubelet::log_rotation::LogRotationConfig;
use podvisor_kubelet::metrics::Metrics;
use podvisor_kubelet::pleg::PlegConfig;
use podvisor_kubelet::pod_workers::Timings;
use podvisor_kubelet::sync_loop::{Allocatable, SyncLoopConfig};
use podvisor_store::{LocalClient, StoreActor};
use podvisor_volumes::{Keep, ObjectSource, Objects};

use super::accounts::ApiService;
use super::node::{self, NodeAddresses};
use super::{AgentConfig, host};

/// What the tree is built on: the machine and the runtime as found at start.
pub(crate) struct Ground {
    pub node_name: String,
    pub allocatable: Allocatable,
    pub runtime: Arc<dyn Runtime>,
    /// `containerd://1.7.24`, or empty while the runtime cannot be reached.
    pub runtime_version: String,
    pub metrics: Metrics,
    /// The cluster this node has joined, if any.
    pub cluster: node::Cluster,
    /// Standalone: the node's own service accounts.
    pub standalone: Option<super::accounts::Standalone>,
    /// The node's address (`host::address`).
    pub address: std::net::IpAddr,
    /// The kubelet server's port (0: not served).
    pub kubelet_port: u16,
}

/// The assembled tree: its children in start order, and the handles the servers read.
pub(crate) struct Tree {
    pub children: Vec<ChildSpec>,
    pub kubelet: Agent,
    pub store: ActorRef<StoreActor>,
}

fn pleg(cfg: &AgentConfig, g: &Ground) -> PlegConfig {
    PlegConfig {
        relist_period: cfg.relist_period,
        mode: cfg.pleg.mode,
        max_stream_retries: cfg.pleg.stream_retries,
        safety_relist_period: cfg.pleg.safety_relist,
        inspect_timeout: cfg.pleg.inspect_timeout,
        event_snapshots: cfg.pleg.event_snapshots,
        node: Some(g.node_name.clone()),
        metrics: g.metrics.clone(),
        ..PlegConfig::default()
    }
}

fn node_config(cfg: &AgentConfig, g: &Ground) -> NodeConfig {
    NodeConfig {
        node_name: g.node_name.clone(),
        pod_log_dir: cfg.pod_log_dir.clone(),
        pod_dir: cfg.state_dir.join("pods"),
        dns: Some(&cfg.node.resolv_conf)
            .filter(|p| !p.is_empty())
            .and_then(|p| read_dns(std::path::Path::new(p))),
        cluster_dns: cfg.node.cluster_dns.clone(),
        cluster_domain: cfg.node.cluster_domain.clone(),
        memory_capacity: super::host::memory_bytes(),
        pod_cgroups: cfg
            .node
            .cgroups_per_qos
            .then(|| PodCgroups::new(&cfg.node.cgroup_root, cfg.node.systemd_cgroups())),
        container_links_dir: Some(&cfg.logs.container_links)
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from),
    }
}

/// How long a ConfigMap or Secret read from the cluster serves before it is read again.
const CLUSTER_OBJECTS_FRESH: Duration = Duration::from_secs(20);

/// The tmpfs that keeps the cluster's objects the node's pods read, for an outage.
const KEEP_SIZE: u64 = 64 << 20;

/// Where pods' ConfigMaps, Secrets and tokens come from: the node's store standalone; in a
/// cluster, the cluster (read as the node, cached, and kept on a tmpfs of the agent's own,
/// never on the node's disk, for an outage that outlasts an agent restart) and its
/// TokenRequest API.
fn pod_objects(cfg: &AgentConfig, store: &ActorRef<StoreActor>, g: &Ground) -> PodObjects {
    let source: Arc<dyn ObjectSource> = match &g.cluster {
        None => {
            let local = LocalClient::client(store);
            let objects = Objects::new(local.clone());
            match &g.standalone {
                Some(s) => Arc::new(
                    objects
                        .with_tokens(Arc::new(LocalTokens::new(s.signer.clone(), local)))
                        .with_services(Arc::new(ApiService(s.endpoint.clone()))),
                ),
                None => Arc::new(objects),
            }
        }
        Some((remote, _)) => {
            let objects = Objects::new(Client::new(remote.clone()))
                .cached_for(CLUSTER_OBJECTS_FRESH)
                .with_tokens(Arc::new(ClusterTokens::new(remote.clone())))
                .with_services(Arc::new(ClusterServices::new(remote.clone()).following()));
            let dir = cfg.state_dir.join("cluster").join("objects");
            match Keep::open(&dir, KEEP_SIZE) {
                Ok(keep) => Arc::new(objects.kept_in(keep)),
                Err(e) => {
                    tracing::warn!(error = %e, "the cluster's objects are not kept for an outage");
                    Arc::new(objects)
                }
            }
        }
    };
    PodObjects {
        source,
        allocatable: g.allocatable,
        // The address the Node reports (`podvisor_node::node::NodeFacts`).
        host_ip: Some(g.address.to_string()),
    }
}

fn kubelet_params(
    cfg: &AgentConfig,
    g: &Ground,
    node_side: &NodeAddresses,
    objects: PodObjects,
) -> AgentParams {
    AgentParams {
        runtime: g.runtime.clone(),
        node: node_config(cfg, g),
        manifest_dir: cfg.manifest_dir.clone(),
        manifest_rescan_period: cfg.manifest_rescan_period,
        prior_statuses: Some(node_side.writer.recipient()),
        pleg: pleg(cfg, g),
        timings: Timings {
            resync_interval: cfg.resync_interval,
            backoff: cfg.sync_backoff,
        },
        sync_loop: SyncLoopConfig {
            allocatable: g.allocatable,
            housekeeping_period: cfg.housekeeping_period,
            sources: vec![
                podvisor_kubelet::manifest_source::SOURCE,
                podvisor_node::SOURCE,
            ],
            ..SyncLoopConfig::default()
        },
        supervision: super::supervision(&cfg.supervisor),
        status_wait: Duration::from_secs(2),
        extra_sources: vec![node_side.source.recipient()],
        status_sink: Some(node_side.writer.recipient()),
        log_rotation: LogRotationConfig {
            max_size: cfg.logs.max_size_bytes(),
            max_files: cfg.logs.max_files,
            monitor_interval: cfg.logs.monitor_interval,
        },
        probe_limits: podvisor_probe::Limits {
            total: cfg.probes.max_in_flight,
            exec: cfg.probes.max_exec_in_flight,
        },
        metrics: g.metrics.clone(),
        objects,
        // Checked when the configuration was read.
        eviction: cfg.eviction.config().ok().flatten(),
        image_gc: cfg.image_gc.config(),
        node_events: Some(node_side.writer.recipient()),
    }
}

/// The whole tree.
pub(crate) fn assemble(cfg: &AgentConfig, g: Ground, registry: &Arc<Registry>) -> Tree {
    let node_side = NodeAddresses::reserve();
    let store = node::store(cfg, &g.node_name);
    let ca_pem = g.standalone.as_ref().map(|s| s.ca_pem.clone());
    let params = kubelet_params(cfg, &g, &node_side, pod_objects(cfg, &store.0, &g));
    let mut kubelet = podvisor_kubelet::agent::build(registry, params, KubeletAddresses::reserve());
    let facts = host::facts(
        cfg,
        &g.node_name,
        &g.allocatable,
        (g.runtime_version, g.kubelet_port),
    );
    let api = node::build(
        &g.node_name,
        node_side,
        &kubelet,
        (facts, g.cluster, ca_pem),
        store,
    );
    let children = api
        .first
        .into_iter()
        .chain(std::mem::take(&mut kubelet.children))
        .chain(api.last)
        .collect();
    Tree {
        children,
        kubelet,
        store: api.store,
    }
}
