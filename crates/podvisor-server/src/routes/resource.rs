//! `GET /metrics/resource`: the node's, pods' and containers' CPU and memory in the
//! Prometheus text format, under the kubelet's stable names (what metrics-server scrapes).

use actix_web::{HttpResponse, web};
use podvisor_core::stats::{CpuStats, MemoryStats, Summary};

use super::ServerState;
use super::text::{Family, escape as label, render as text};

pub(super) async fn serve(state: web::Data<ServerState>) -> HttpResponse {
    let summary = (state.sources.summary)().await;
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(render(summary.as_ref()))
}

fn cpu(f: &mut Family, labels: &str, c: Option<&CpuStats>) {
    if let Some((c, ns)) = c.and_then(|c| Some((c, c.usage_core_nano_seconds?))) {
        let secs = ns as f64 / 1e9;
        f.samples.push(format!(
            "{}{labels} {secs} {}",
            f.name,
            c.time.0.as_millisecond()
        ));
    }
}

fn memory(f: &mut Family, labels: &str, m: Option<&MemoryStats>) {
    if let Some((m, ws)) = m.and_then(|m| Some((m, m.working_set_bytes?))) {
        f.samples.push(format!(
            "{}{labels} {ws} {}",
            f.name,
            m.time.0.as_millisecond()
        ));
    }
}

const FAMILIES: [(&str, &str, &str); 8] = [
    (
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the container in core-seconds",
    ),
    (
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set of the container in bytes",
    ),
    (
        "container_start_time_seconds",
        "gauge",
        "Start time of the container since unix epoch in seconds",
    ),
    (
        "node_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the node in core-seconds",
    ),
    (
        "node_memory_working_set_bytes",
        "gauge",
        "Current working set of the node in bytes",
    ),
    (
        "pod_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the pod in core-seconds",
    ),
    (
        "pod_memory_working_set_bytes",
        "gauge",
        "Current working set of the pod in bytes",
    ),
    (
        "resource_scrape_error",
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    ),
];

/// The text for `summary`; without one, only `resource_scrape_error 1`.
pub(crate) fn render(summary: Option<&Summary>) -> String {
    let mut fams = FAMILIES.map(Family::new);
    let error = u8::from(summary.is_none());
    fams[7]
        .samples
        .push(format!("resource_scrape_error {error}"));
    if let Some(s) = summary {
        samples(&mut fams, s);
    }
    text(&fams, "[STABLE] ")
}

fn samples(fams: &mut [Family; 8], s: &Summary) {
    cpu(&mut fams[3], "", s.node.cpu.as_ref());
    memory(&mut fams[4], "", s.node.memory.as_ref());
    for p in &s.pods {
        let pod = format!(
            "namespace=\"{}\",pod=\"{}\"",
            label(&p.pod_ref.namespace),
            label(&p.pod_ref.name)
        );
        cpu(&mut fams[5], &format!("{{{pod}}}"), p.cpu.as_ref());
        memory(&mut fams[6], &format!("{{{pod}}}"), p.memory.as_ref());
        for c in &p.containers {
            let labels = format!("{{container=\"{}\",{pod}}}", label(&c.name));
            cpu(&mut fams[0], &labels, c.cpu.as_ref());
            memory(&mut fams[1], &labels, c.memory.as_ref());
            if let Some(t) = &c.start_time {
                let line = format!("container_start_time_seconds{labels} {}", t.0.as_second());
                fams[2].samples.push(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_becomes_the_kubelets_resource_metrics() {
        let s: Summary = serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "n1", "cpu": {"time": "2026-11-26T10:00:00Z", "usageCoreNanoSeconds": 2_500_000_000u64},
                     "memory": {"time": "2026-11-26T10:00:00Z", "workingSetBytes": 1024}},
            "pods": [{"podRef": {"name": "web", "namespace": "d\"x", "uid": "u"},
                      "cpu": {"time": "2026-11-26T10:00:00Z", "usageCoreNanoSeconds": 1_000_000_000u64},
                      "containers": [{"name": "app", "startTime": "2026-11-26T09:00:00Z",
                                      "memory": {"time": "2026-11-26T10:00:00Z", "workingSetBytes": 77}}]}]
        }))
        .unwrap();
        let text = render(Some(&s));
        assert!(
            text.contains("node_cpu_usage_seconds_total 2.5 1795687200000\n"),
            "{text}"
        );
        assert!(
            text.contains("pod_cpu_usage_seconds_total{namespace=\"d\\\"x\",pod=\"web\"} 1 "),
            "{text}"
        );
        assert!(text.contains("container_memory_working_set_bytes{container=\"app\",namespace=\"d\\\"x\",pod=\"web\"} 77 "), "{text}");
        assert!(
            text.contains("container_start_time_seconds{container=\"app\""),
            "{text}"
        );
        assert!(text.contains("resource_scrape_error 0\n"));
        assert!(
            !text.contains("container_cpu_usage_seconds_total{"),
            "no sample without usage"
        );
        assert_eq!(
            render(None),
            "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"
        );
    }
}
