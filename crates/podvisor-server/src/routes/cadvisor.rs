//! `GET /metrics/cadvisor`: the containers' use in the Prometheus text format, under the
//! names and labels of the cAdvisor the kubelet embeds (`container`, `id` (the cgroup),
//! `image`, `name` (the runtime's id), `namespace`, `pod`), as dashboards and alerts read
//! them: one series per running container, one per pod (its cgroup, with the pod's
//! network), one for the whole machine (`id="/"`), and the machine's size.

use actix_web::{HttpResponse, web};
use podvisor_core::stats::{ContainerStats, CpuStats, MemoryStats, NetworkStats, PodStats};

use super::ServerState;
use super::text::{Family, labels, render as text};
use crate::sources::{Cadvisor, Placement};

pub(super) async fn serve(state: web::Data<ServerState>) -> HttpResponse {
    match (state.sources.cadvisor)().await {
        Some(c) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4")
            .body(render(&c)),
        None => HttpResponse::InternalServerError()
            .body("Internal Error: the runtime's container stats could not be read\n"),
    }
}

const CPU: usize = 0;
const WORKING_SET: usize = 1;
const USAGE: usize = 2;
const RSS: usize = 3;
const START: usize = 4;
const LAST_SEEN: usize = 5;
const NET: usize = 6;
const PROCESSES: usize = 10;
const CORES: usize = 11;
const MEMORY: usize = 12;

type Spec = (&'static str, &'static str, &'static str);

const FAMILIES: [Spec; 13] = [
    (
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed in seconds.",
    ),
    (
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set in bytes.",
    ),
    (
        "container_memory_usage_bytes",
        "gauge",
        "Current memory usage in bytes, including all memory regardless of when it was accessed",
    ),
    ("container_memory_rss", "gauge", "Size of RSS in bytes."),
    (
        "container_start_time_seconds",
        "gauge",
        "Start time of the container since unix epoch in seconds.",
    ),
    (
        "container_last_seen",
        "gauge",
        "Last time a container was seen by the exporter",
    ),
    (
        "container_network_receive_bytes_total",
        "counter",
        "Cumulative count of bytes received",
    ),
    (
        "container_network_receive_errors_total",
        "counter",
        "Cumulative count of errors encountered while receiving",
    ),
    (
        "container_network_transmit_bytes_total",
        "counter",
        "Cumulative count of bytes transmitted",
    ),
    (
        "container_network_transmit_errors_total",
        "counter",
        "Cumulative count of errors encountered while transmitting",
    ),
    (
        "container_processes",
        "gauge",
        "Number of processes running inside the container.",
    ),
    ("machine_cpu_cores", "gauge", "Number of logical CPU cores."),
    (
        "machine_memory_bytes",
        "gauge",
        "Amount of memory installed on the machine.",
    ),
];

/// The labels of one series, in cAdvisor's (alphabetical) order.
struct Series<'a> {
    container: &'a str,
    id: &'a str,
    image: &'a str,
    name: &'a str,
    namespace: &'a str,
    pod: &'a str,
}

impl Series<'_> {
    fn pairs(&self) -> Vec<(&str, &str)> {
        vec![
            ("container", self.container),
            ("id", self.id),
            ("image", self.image),
            ("name", self.name),
            ("namespace", self.namespace),
            ("pod", self.pod),
        ]
    }

    fn labels(&self) -> String {
        labels(&self.pairs())
    }

    /// With one more label, in its place (`cpu`, `interface`).
    fn with(&self, key: &str, value: &str) -> String {
        let mut pairs = self.pairs();
        pairs.push((key, value));
        pairs.sort_by_key(|(k, _)| *k);
        labels(&pairs)
    }
}

pub(crate) fn render(c: &Cadvisor) -> String {
    let mut fams = FAMILIES.map(Family::new);
    let m = &c.machine;
    let machine = labels(&[
        ("boot_id", &m.boot_id),
        ("machine_id", &m.machine_id),
        ("system_uuid", &m.system_uuid),
    ]);
    let cores = format!("machine_cpu_cores{machine} {}", m.cpu_cores);
    fams[CORES].samples.push(cores);
    let memory = format!("machine_memory_bytes{machine} {}", m.memory_bytes);
    fams[MEMORY].samples.push(memory);
    let root = Series {
        container: "",
        id: "/",
        image: "",
        name: "",
        namespace: "",
        pod: "",
    };
    let node = &c.summary.node;
    usage(&mut fams, &root, node.cpu.as_ref(), node.memory.as_ref());
    for p in &c.summary.pods {
        let placement = c.pods.get(&p.pod_ref.uid);
        pod(&mut fams, p, placement, c.systemd);
    }
    text(&fams, "")
}

fn pod(fams: &mut [Family; 13], p: &PodStats, placement: Option<&Placement>, systemd: bool) {
    let cgroup = placement.map(|pl| cgroup_path(&pl.cgroup, systemd));
    let series = Series {
        container: "",
        id: cgroup.as_deref().unwrap_or_default(),
        image: "",
        name: "",
        namespace: &p.pod_ref.namespace,
        pod: &p.pod_ref.name,
    };
    usage(fams, &series, p.cpu.as_ref(), p.memory.as_ref());
    if let Some(n) = &p.network {
        network(fams, &series, n);
    }
    if let Some(count) = p.process_stats.as_ref().and_then(|s| s.process_count) {
        let line = format!("container_processes{} {count}", series.labels());
        fams[PROCESSES].samples.push(line);
    }
    for c in &p.containers {
        container(fams, &series, c, placement, systemd);
    }
}

fn container(
    fams: &mut [Family; 13],
    pod: &Series<'_>,
    c: &ContainerStats,
    placement: Option<&Placement>,
    systemd: bool,
) {
    let id = placement
        .map(|pl| container_cgroup(&pl.cgroup, &c.runtime_id, systemd))
        .unwrap_or_default();
    let image = placement.and_then(|pl| pl.images.get(&c.name));
    let series = Series {
        container: &c.name,
        id: &id,
        image: image.map_or("", String::as_str),
        name: &c.runtime_id,
        ..*pod
    };
    usage(fams, &series, c.cpu.as_ref(), c.memory.as_ref());
    let labels = series.labels();
    if let Some(t) = &c.start_time {
        let line = format!("container_start_time_seconds{labels} {}", t.0.as_second());
        fams[START].samples.push(line);
    }
}

/// CPU and memory of one series, each stamped with when it was measured (CPU time as
/// cAdvisor gives it without per-CPU figures: `cpu="total"`).
fn usage(fams: &mut [Family; 13], s: &Series<'_>, cpu: Option<&CpuStats>, m: Option<&MemoryStats>) {
    let labels = s.labels();
    if let Some((c, ns)) = cpu.and_then(|c| Some((c, c.usage_core_nano_seconds?))) {
        let (secs, at) = (ns as f64 / 1e9, c.time.0.as_millisecond());
        let total = s.with("cpu", "total");
        let line = format!("container_cpu_usage_seconds_total{total} {secs} {at}");
        fams[CPU].samples.push(line);
        let seen = format!("container_last_seen{labels} {} {at}", c.time.0.as_second());
        fams[LAST_SEEN].samples.push(seen);
    }
    let Some(m) = m else { return };
    let at = m.time.0.as_millisecond();
    let figures = [
        (WORKING_SET, m.working_set_bytes),
        (USAGE, m.usage_bytes),
        (RSS, m.rss_bytes),
    ];
    for (i, v) in figures {
        if let Some(v) = v {
            let line = format!("{}{labels} {v} {at}", fams[i].name);
            fams[i].samples.push(line);
        }
    }
}

fn network(fams: &mut [Family; 13], series: &Series<'_>, n: &NetworkStats) {
    let at = n.time.0.as_millisecond();
    let interfaces = if n.interfaces.is_empty() {
        std::slice::from_ref(&n.default)
    } else {
        &n.interfaces
    };
    for i in interfaces {
        let labels = series.with("interface", &i.name);
        let figures = [i.rx_bytes, i.rx_errors, i.tx_bytes, i.tx_errors];
        for (k, v) in figures.into_iter().enumerate() {
            if let Some(v) = v {
                let f = &mut fams[NET + k];
                let line = format!("{}{labels} {v} {at}", f.name);
                f.samples.push(line);
            }
        }
    }
}

/// A pod's cgroup as a path under the cgroup filesystem's root: the cgroupfs driver's
/// parent as it is; a systemd slice (`kubepods-burstable-pod<uid>.slice`) under each slice
/// its name says it is in (`/kubepods.slice/kubepods-burstable.slice/...`).
fn cgroup_path(parent: &str, systemd: bool) -> String {
    if !systemd {
        return parent.to_string();
    }
    let stem = parent.strip_suffix(".slice").unwrap_or(parent);
    let mut path = String::new();
    let mut prefix = String::new();
    for part in stem.split('-') {
        if !prefix.is_empty() {
            prefix.push('-');
        }
        prefix.push_str(part);
        path.push_str(&format!("/{prefix}.slice"));
    }
    path
}

/// Where the runtime (containerd) puts a container under its pod's cgroup.
fn container_cgroup(parent: &str, id: &str, systemd: bool) -> String {
    let pod = cgroup_path(parent, systemd);
    if systemd {
        format!("{pod}/cri-containerd-{id}.scope")
    } else {
        format!("{pod}/{id}")
    }
}

#[cfg(test)]
#[path = "cadvisor_tests.rs"]
mod tests;
