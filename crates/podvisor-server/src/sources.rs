//! What the server reads from the rest of the agent, handed in as functions so it depends
//! on no actor: the node's pods, its usage, and its metrics.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use podvisor_core::stats::Summary;

/// The pods the node runs (its sources' desired pods).
pub type PodsSource = Arc<dyn Fn() -> BoxFuture<'static, Vec<Pod>> + Send + Sync>;
/// What the node and its pods use; `None` when the runtime cannot say.
pub type SummarySource = Arc<dyn Fn() -> BoxFuture<'static, Option<Summary>> + Send + Sync>;
/// The agent's metrics in the Prometheus text format.
pub type MetricsSource = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
pub struct Sources {
    pub pods: PodsSource,
    pub summary: SummarySource,
    pub metrics: MetricsSource,
    /// `/metrics/probes`: the probe metrics, apart as the kubelet keeps them.
    pub probe_metrics: MetricsSource,
}
