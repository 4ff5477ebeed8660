//! What the server reads from the rest of the agent, handed in as functions so it depends
//! on no actor: the node's pods, its usage, and its metrics.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use podvisor_core::stats::Summary;

/// The pods the node runs (its sources' desired pods).
pub type PodsSource = Arc<dyn Fn() -> BoxFuture<'static, Vec<Pod>> + Send + Sync>;
/// What the node and its pods use; `None` when the runtime cannot say.
pub type SummarySource = Arc<dyn Fn() -> BoxFuture<'static, Option<Summary>> + Send + Sync>;
/// What `/metrics/cadvisor` is made of; `None` when the runtime cannot say.
pub type CadvisorSource = Arc<dyn Fn() -> BoxFuture<'static, Option<Cadvisor>> + Send + Sync>;
/// The agent's metrics in the Prometheus text format.
pub type MetricsSource = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
pub struct Sources {
    pub pods: PodsSource,
    pub summary: SummarySource,
    pub metrics: MetricsSource,
    /// `/metrics/probes`: the probe metrics, apart as the kubelet keeps them.
    pub probe_metrics: MetricsSource,
    /// `/configz`: the configuration the node runs with, as a `KubeletConfiguration` under
    /// `kubeletconfig` (it does not change while the node runs).
    pub configz: Arc<serde_json::Value>,
    pub cadvisor: CadvisorSource,
}

/// The containers' use (the summary) and what cAdvisor's labels name beyond it.
#[derive(Debug, Clone)]
pub struct Cadvisor {
    pub summary: Summary,
    /// Each pod's placement, by UID.
    pub pods: HashMap<String, Placement>,
    /// The runtime's cgroup driver is systemd's: pods' cgroups are slices.
    pub systemd: bool,
    pub machine: Machine,
}

/// Where a pod runs: its cgroup (as its sandbox's `cgroup_parent` names it) and each of
/// its containers' images, by container name.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub cgroup: String,
    pub images: HashMap<String, String>,
}

/// The machine: its size, and what names it (cAdvisor's `machine_*` labels; empty where
/// the machine does not say).
#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub cpu_cores: usize,
    pub memory_bytes: u64,
    pub boot_id: String,
    pub machine_id: String,
    pub system_uuid: String,
}
