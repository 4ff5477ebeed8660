//! The node's own metrics on `/metrics`, beside the kubelet's: `kubelet_node_name`, the
//! certificate manager's (how long the client and serving certificates have left, and
//! how many renewals failed), and the `process_*` metrics every Prometheus target has. The
//! alerts shipped with kube-prometheus (`KubeletClientCertificateExpiration`, ...) read
//! these names.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use prometheus::core::{Collector, Desc};
use prometheus::process_collector::ProcessCollector;
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, IntCounter, IntGaugeVec, Opts, Registry};

/// What the certificate managers count.
pub(crate) struct NodeMetrics {
    pub client_renew_errors: IntCounter,
    pub server_renew_errors: IntCounter,
}

fn alpha(name: &str, help: &str) -> Opts {
    Opts::new(name, format!("[ALPHA] {help}"))
}

/// Registers the node's metrics; `credentials` is where the node's certificates are kept
/// (`kubelet-client.pem`, `kubelet-server.pem`).
pub(crate) fn register(
    registry: &Registry,
    node: &str,
    credentials: &Path,
) -> prometheus::Result<NodeMetrics> {
    let name = IntGaugeVec::new(
        alpha(
            "kubelet_node_name",
            "The node's name. The count is always 1.",
        ),
        &["node"],
    )?;
    name.with_label_values(&[node]).set(1);
    registry.register(Box::new(name))?;
    registry.register(Box::new(ProcessCollector::for_self()))?;
    registry.register(Box::new(CertificateTtl::new(credentials)?))?;
    let metrics = NodeMetrics {
        client_renew_errors: IntCounter::with_opts(alpha(
            "kubelet_certificate_manager_client_expiration_renew_errors",
            "Counter of certificate renewal errors.",
        ))?,
        server_renew_errors: IntCounter::with_opts(alpha(
            "kubelet_server_expiration_renew_errors",
            "Counter of certificate renewal errors.",
        ))?,
    };
    registry.register(Box::new(metrics.client_renew_errors.clone()))?;
    registry.register(Box::new(metrics.server_renew_errors.clone()))?;
    Ok(metrics)
}

/// The certificates' time to live, read from their files when scraped.
struct CertificateTtl {
    files: [PathBuf; 2],
    gauges: [Gauge; 2],
}

const TTL_HELP: &str = "Gauge of the TTL (time-to-live) of the Kubelet's {} certificate. The \
                        value is in seconds until certificate expiry (negative if already \
                        expired). If {} certificate is invalid or unused, the value will be +INF.";

impl CertificateTtl {
    fn new(dir: &Path) -> prometheus::Result<Self> {
        let gauge =
            |name: &str, what: &str| Gauge::with_opts(alpha(name, &TTL_HELP.replace("{}", what)));
        Ok(Self {
            files: [
                dir.join("kubelet-client.pem"),
                dir.join("kubelet-server.pem"),
            ],
            gauges: [
                gauge("kubelet_certificate_manager_client_ttl_seconds", "client")?,
                gauge("kubelet_certificate_manager_server_ttl_seconds", "serving")?,
            ],
        })
    }
}

/// Seconds until the certificate in `file` expires; +Inf without one.
fn ttl(file: &Path, now: SystemTime) -> f64 {
    match podvisor_cluster::rotation::validity(file) {
        Ok((_, until)) => match until.duration_since(now) {
            Ok(left) => left.as_secs_f64(),
            Err(past) => -past.duration().as_secs_f64(),
        },
        Err(_) => f64::INFINITY,
    }
}

impl Collector for CertificateTtl {
    fn desc(&self) -> Vec<&Desc> {
        self.gauges.iter().flat_map(|g| g.desc()).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let now = SystemTime::now();
        for (file, gauge) in self.files.iter().zip(&self.gauges) {
            gauge.set(ttl(file, now));
        }
        self.gauges.iter().flat_map(|g| g.collect()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_metrics_have_the_kubelets_names() {
        let dir =
            std::env::temp_dir().join(format!("podvisor-node-metrics-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["n1".into()]).unwrap();
        params.not_after = rcgen::date_time_ymd(2100, 1, 1);
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("kubelet-client.pem"), cert.pem()).unwrap();

        let registry = Registry::new();
        let m = register(&registry, "n1", &dir).unwrap();
        m.server_renew_errors.inc();
        let mut text = String::new();
        prometheus::TextEncoder::new()
            .encode_utf8(&registry.gather(), &mut text)
            .unwrap();
        assert!(
            text.contains("kubelet_node_name{node=\"n1\"} 1\n"),
            "{text}"
        );
        let value = |name: &str| -> f64 {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '));
            line.and_then(|v| v.parse().ok()).unwrap()
        };
        let server = value("kubelet_certificate_manager_server_ttl_seconds");
        assert!(
            server.is_infinite() && server > 0.0,
            "no serving certificate kept"
        );
        let client = value("kubelet_certificate_manager_client_ttl_seconds");
        assert!(client > 60.0 * 60.0 * 24.0 * 365.0 * 50.0, "{client}");
        assert!(
            text.contains("kubelet_server_expiration_renew_errors 1\n"),
            "{text}"
        );
        assert!(text.contains("kubelet_certificate_manager_client_expiration_renew_errors 0\n"));
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.contains("process_start_time_seconds "), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
