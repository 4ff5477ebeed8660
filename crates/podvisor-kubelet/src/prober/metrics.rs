//! The kubelet's probe metrics, served apart at `/metrics/probes` as the kubelet serves
//! them (their own registry): `prober_probe_total` by result, and
//! `prober_probe_duration_seconds` for the runs that gave an answer. A probe that ends
//! (its container or pod no longer has it) takes its series with it, as the kubelet's
//! probe worker removes its own when it stops, so a node that ran many pods does not
//! keep a series for each.

use std::collections::HashMap;
use std::time::Duration;

use podvisor_core::PodExt;
use podvisor_probe::{Outcome, ProbeKey};
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use tracing::warn;

const TOTAL: &str =
    "Cumulative number of a liveness, readiness or startup probe for a container by result.";
const DURATION: &str = "Duration in seconds for a probe response.";
const RESULTS: [&str; 3] = ["successful", "failed", "unknown"];

/// The two families and the registry `/metrics/probes` reads.
pub struct ProbeMetrics {
    total: IntCounterVec,
    duration: HistogramVec,
    registry: Registry,
}

impl ProbeMetrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let total = IntCounterVec::new(
            Opts::new("probe_total", format!("[ALPHA] {TOTAL}")).subsystem("prober"),
            &[
                "probe_type",
                "result",
                "container",
                "pod",
                "namespace",
                "pod_uid",
            ],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::from(
                Opts::new("probe_duration_seconds", format!("[ALPHA] {DURATION}"))
                    .subsystem("prober"),
            ),
            &["probe_type", "container", "pod", "namespace"],
        )?;
        let registry = Registry::new();
        registry.register(Box::new(total.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self {
            total,
            duration,
            registry,
        })
    }

    /// Forgets every series (a restarted prober no longer knows which it wrote; counters
    /// that start again are what a scraper expects after a restart).
    pub fn reset(&self) {
        self.total.reset();
        self.duration.reset();
    }

    /// The families in the Prometheus text format.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            warn!(error = %e, "the probe metrics could not be written");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A probe's labels: which probe of which container of which pod.
#[derive(Debug, Clone)]
struct Labels {
    kind: &'static str,
    container: String,
    pod: String,
    namespace: String,
    uid: String,
}

/// The series the prober has written, by probe, so that those of ended probes go.
#[derive(Default)]
pub(crate) struct Series {
    live: HashMap<ProbeKey, Labels>,
}

impl Series {
    /// One run of `key` in `pod` ended with `outcome` after `took`.
    pub(crate) fn observe(
        &mut self,
        m: &ProbeMetrics,
        key: &ProbeKey,
        pod: &k8s_openapi::api::core::v1::Pod,
        outcome: &Outcome,
        took: Duration,
    ) {
        let l = self.live.entry(key.clone()).or_insert_with(|| Labels {
            kind: key.kind.as_str(),
            container: key.container.to_string(),
            pod: pod.name().to_string(),
            namespace: pod.namespace().to_string(),
            uid: key.uid.to_string(),
        });
        let result = match outcome.passed() {
            Some(true) => "successful",
            Some(false) => "failed",
            None => "unknown",
        };
        let labels = [l.kind, result, &l.container, &l.pod, &l.namespace, &l.uid];
        m.total.with_label_values(&labels).inc();
        if result != "failed" {
            let labels = [l.kind, &l.container, &l.pod, &l.namespace];
            m.duration
                .with_label_values(&labels)
                .observe(took.as_secs_f64());
        }
    }

    /// Removes the series of every probe `exists` no longer knows.
    pub(crate) fn prune(&mut self, m: &ProbeMetrics, exists: impl Fn(&ProbeKey) -> bool) {
        self.live.retain(|key, l| {
            if exists(key) {
                return true;
            }
            for result in RESULTS {
                let labels = [l.kind, result, &l.container, &l.pod, &l.namespace, &l.uid];
                let _ = m.total.remove_label_values(&labels);
            }
            let _ = m
                .duration
                .remove_label_values(&[l.kind, &l.container, &l.pod, &l.namespace]);
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use podvisor_probe::ProbeKind;

    use super::*;

    fn pod() -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop", "uid": "u1"},
        }))
        .unwrap()
    }

    fn key(kind: ProbeKind) -> ProbeKey {
        ProbeKey {
            uid: "u1".into(),
            container: Arc::from("app"),
            kind,
        }
    }

    #[test]
    fn runs_are_counted_by_result_and_an_ended_probe_takes_its_series_along() {
        let m = ProbeMetrics::new().unwrap();
        let mut series = Series::default();
        let ready = key(ProbeKind::Readiness);
        let ms = Duration::from_millis(3);
        series.observe(&m, &ready, &pod(), &Outcome::Success, ms);
        series.observe(&m, &ready, &pod(), &Outcome::Success, ms);
        series.observe(&m, &ready, &pod(), &Outcome::Failure("no".into()), ms);
        let live = key(ProbeKind::Liveness);
        series.observe(&m, &live, &pod(), &Outcome::Error("exec".into()), ms);
        let text = m.text();
        for line in [
            r#"prober_probe_total{container="app",namespace="shop",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"} 2"#,
            r#"prober_probe_total{container="app",namespace="shop",pod="web",pod_uid="u1",probe_type="Readiness",result="failed"} 1"#,
            r#"prober_probe_total{container="app",namespace="shop",pod="web",pod_uid="u1",probe_type="Liveness",result="unknown"} 1"#,
            r#"prober_probe_duration_seconds_count{container="app",namespace="shop",pod="web",probe_type="Readiness"} 2"#,
            "# HELP prober_probe_total [ALPHA] Cumulative number",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        series.prune(&m, |k| k.kind == ProbeKind::Liveness);
        let text = m.text();
        assert!(!text.contains("Readiness"), "{text}");
        assert!(text.contains(r#"probe_type="Liveness""#), "{text}");
        series.prune(&m, |_| false);
        assert!(!m.text().contains("prober_probe_total{"), "{}", m.text());
    }
}
