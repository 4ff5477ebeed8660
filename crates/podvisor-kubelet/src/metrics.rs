//! The kubelet's metrics, with the kubelet's names, labels and buckets, so dashboards and
//! alerts written for a kubelet work on podvisor unchanged. Each is kept where the kubelet
//! keeps it: the PLEG's relists, the pod workers' syncs, the syncer's container starts,
//! the status manager's pod starts, and every CRI call (as the client's observer).
//!
//! All of them are `[ALPHA]` in the kubelet, and say so in their help, as the kubelet's
//! registry writes it. A family with labels appears once it has a series, as the
//! kubelet's do. Nothing here evicts pods for node pressure yet, so `kubelet_evictions` is
//! registered and never appears (as on a kubelet that never evicted).

use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

/// The kubelet's pod start buckets (seconds).
const POD_START: [f64; 25] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

/// Prometheus' default buckets, which the kubelet uses for syncs and relists.
const DEFAULT: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The kubelet's runtime operation buckets: 14 from 5 ms, each 2.5 times the last.
fn runtime_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.005, 2.5, 14).expect("valid buckets")
}

pub struct KubeletMetrics {
    pub pod_start_sli: Histogram,
    pub pod_start: Histogram,
    pub pod_worker: HistogramVec,
    pub relist_duration: Histogram,
    pub relist_interval: Histogram,
    pub pleg_last_seen: Gauge,
    pub running_pods: IntGauge,
    pub running_containers: IntGaugeVec,
    pub runtime_operations: IntCounterVec,
    pub runtime_duration: HistogramVec,
    pub runtime_errors: IntCounterVec,
    pub started_containers: IntCounterVec,
    pub started_container_errors: IntCounterVec,
    pub evictions: IntCounterVec,
    /// `/metrics/probes`, in a registry of their own.
    pub probes: crate::prober::ProbeMetrics,
}

fn alpha(name: &str, help: &str) -> Opts {
    Opts::new(name, format!("[ALPHA] {help}")).subsystem("kubelet")
}

fn histogram(name: &str, help: &str, buckets: &[f64]) -> prometheus::Result<Histogram> {
    Histogram::with_opts(HistogramOpts::from(alpha(name, help)).buckets(buckets.to_vec()))
}

fn histograms(
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> prometheus::Result<HistogramVec> {
    HistogramVec::new(
        HistogramOpts::from(alpha(name, help)).buckets(buckets.to_vec()),
        labels,
    )
}

fn counters(name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntCounterVec> {
    IntCounterVec::new(alpha(name, help), labels)
}

const OP: [&str; 1] = ["operation_type"];

const SLI: &str = "Duration in seconds to start a pod, excluding time to pull images and run init containers, from its creation to the moment all its containers are seen running";
const START: &str = "Duration in seconds from the node agent seeing a pod for the first time to the pod starting to run";
const WORKER: &str = "Duration in seconds to sync a single pod. Broken down by operation type: create, update, sync, kill or terminated";
const RELIST: &str = "Duration in seconds for relisting pods in PLEG.";
const INTERVAL: &str = "Interval in seconds between relisting in PLEG.";
const LAST_SEEN: &str = "Timestamp in seconds when PLEG was last seen active.";
const RUNNING_PODS: &str = "Number of pods that have a running pod sandbox";
const RUNNING_CONTAINERS: &str = "Number of containers currently running";
const OPERATIONS: &str = "Cumulative number of runtime operations by operation type.";
const OPERATION_TIME: &str =
    "Duration in seconds of runtime operations. Broken down by operation type.";
const OPERATION_ERRORS: &str = "Cumulative number of runtime operation errors by operation type.";
const STARTED: &str = "Cumulative number of containers started";
const START_ERRORS: &str = "Cumulative number of errors when starting containers";
const EVICTIONS: &str = "Cumulative number of pod evictions by eviction signal";

impl KubeletMetrics {
    /// Every metric, registered in `registry`.
    pub fn new(registry: &Registry) -> Result<Arc<Self>, prometheus::Error> {
        let m = Self::unregistered()?;
        registry.register(Box::new(m.pod_start_sli.clone()))?;
        registry.register(Box::new(m.pod_start.clone()))?;
        registry.register(Box::new(m.pod_worker.clone()))?;
        registry.register(Box::new(m.relist_duration.clone()))?;
        registry.register(Box::new(m.relist_interval.clone()))?;
        registry.register(Box::new(m.pleg_last_seen.clone()))?;
        registry.register(Box::new(m.running_pods.clone()))?;
        registry.register(Box::new(m.running_containers.clone()))?;
        registry.register(Box::new(m.runtime_operations.clone()))?;
        registry.register(Box::new(m.runtime_duration.clone()))?;
        registry.register(Box::new(m.runtime_errors.clone()))?;
        registry.register(Box::new(m.started_containers.clone()))?;
        registry.register(Box::new(m.started_container_errors.clone()))?;
        registry.register(Box::new(m.evictions.clone()))?;
        Ok(Arc::new(m))
    }

    /// Metrics kept but shown nowhere (tests, benchmarks, a tree built without a registry).
    pub fn detached() -> Arc<Self> {
        Arc::new(Self::unregistered().expect("valid metric definitions"))
    }

    fn unregistered() -> Result<Self, prometheus::Error> {
        let gauge = |name, help| IntGauge::with_opts(alpha(name, help));
        Ok(Self {
            pod_start_sli: histogram("pod_start_sli_duration_seconds", SLI, &POD_START)?,
            pod_start: histogram("pod_start_duration_seconds", START, &POD_START)?,
            pod_worker: histograms("pod_worker_duration_seconds", WORKER, &DEFAULT, &OP)?,
            relist_duration: histogram("pleg_relist_duration_seconds", RELIST, &DEFAULT)?,
            relist_interval: histogram("pleg_relist_interval_seconds", INTERVAL, &DEFAULT)?,
            pleg_last_seen: Gauge::with_opts(alpha("pleg_last_seen_seconds", LAST_SEEN))?,
            running_pods: gauge("running_pods", RUNNING_PODS)?,
            running_containers: IntGaugeVec::new(
                alpha("running_containers", RUNNING_CONTAINERS),
                &["container_state"],
            )?,
            runtime_operations: counters("runtime_operations_total", OPERATIONS, &OP)?,
            runtime_duration: histograms(
                "runtime_operations_duration_seconds",
                OPERATION_TIME,
                &runtime_buckets(),
                &OP,
            )?,
            runtime_errors: counters("runtime_operations_errors_total", OPERATION_ERRORS, &OP)?,
            started_containers: counters("started_containers_total", STARTED, &["container_type"])?,
            started_container_errors: counters(
                "started_containers_errors_total",
                START_ERRORS,
                &["container_type", "code"],
            )?,
            evictions: counters("evictions", EVICTIONS, &["eviction_signal"])?,
            probes: crate::prober::ProbeMetrics::new()?,
        })
    }

    /// One relist: how long it took, and how long since the one before.
    pub fn relisted(&self, took: Duration, since_last: Option<Duration>) {
        self.relist_duration.observe(took.as_secs_f64());
        if let Some(i) = since_last {
            self.relist_interval.observe(i.as_secs_f64());
        }
        self.seen_active();
    }

    /// The PLEG did its work now (a relist, or an event in evented mode).
    pub fn seen_active(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.pleg_last_seen.set(now as f64);
    }
}

/// Every CRI call, counted and timed under the kubelet's name for its method.
impl podvisor_cri::CallObserver for KubeletMetrics {
    fn observe(&self, method: &'static str, took: Duration, failed: bool) {
        let op = [podvisor_cri::operation_type(method)];
        self.runtime_operations.with_label_values(&op).inc();
        self.runtime_duration
            .with_label_values(&op)
            .observe(took.as_secs_f64());
        if failed {
            self.runtime_errors.with_label_values(&op).inc();
        }
    }
}

/// The handle components keep: cheap to clone, `Debug` and `Default` (detached) so the
/// configurations it rides in keep theirs.
#[derive(Clone)]
pub struct Metrics(pub Arc<KubeletMetrics>);

impl Default for Metrics {
    fn default() -> Self {
        Self(KubeletMetrics::detached())
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl std::ops::Deref for Metrics {
    type Target = KubeletMetrics;
    fn deref(&self) -> &KubeletMetrics {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_cri::CallObserver;
    use prometheus::Encoder;

    #[test]
    fn the_exposition_has_the_kubelets_names_labels_and_buckets() {
        let registry = Registry::new();
        let m = KubeletMetrics::new(&registry).unwrap();
        m.observe("RunPodSandbox", Duration::from_millis(60), false);
        m.observe("RunPodSandbox", Duration::from_millis(70), true);
        m.pod_worker.with_label_values(&["create"]).observe(0.2);
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in [
            "kubelet_runtime_operations_total{operation_type=\"run_podsandbox\"} 2",
            "kubelet_runtime_operations_errors_total{operation_type=\"run_podsandbox\"} 1",
            "kubelet_runtime_operations_duration_seconds_bucket{operation_type=\"run_podsandbox\",le=\"0.078125\"} 2",
            "kubelet_runtime_operations_duration_seconds_bucket{operation_type=\"run_podsandbox\",le=\"745.0580596923828\"} 2",
            "kubelet_pod_worker_duration_seconds_bucket{operation_type=\"create\",le=\"0.25\"} 1",
            "kubelet_pod_start_duration_seconds_bucket{le=\"3600\"} 0",
            "# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        // A family with labels shows once it has a series, as the kubelet's do.
        assert!(!text.contains("kubelet_evictions"), "{text}");
    }
}
