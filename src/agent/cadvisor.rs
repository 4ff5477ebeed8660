//! What `/metrics/cadvisor` is made of: the stats actor's summary, and from the pods the
//! node runs, each pod's cgroup (as its sandbox names it) and its containers' images.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use podvisor_kubelet::agent::Agent;
use podvisor_kubelet::kuberuntime::pod_cgroups::PodCgroups;
use podvisor_kubelet::protocol::sources::GetDesiredPods;
use podvisor_kubelet::stats::GetSummary;
use podvisor_server::{Cadvisor, CadvisorSource, Machine, Placement};

use super::AgentConfig;

pub(crate) fn source(kubelet: &Agent, cfg: &AgentConfig) -> CadvisorSource {
    let desired = kubelet.sync_loop.recipient::<GetDesiredPods>();
    let stats = kubelet.stats.recipient::<GetSummary>();
    let systemd = cfg.node.systemd_cgroups();
    let cgroups = Arc::new(
        cfg.node
            .cgroups_per_qos
            .then(|| PodCgroups::new(&cfg.node.cgroup_root, systemd)),
    );
    let read = |path: &str| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.trim().to_string()
    };
    let machine = Machine {
        cpu_cores: super::host::cpu_cores(),
        memory_bytes: u64::try_from(super::host::memory_bytes()).unwrap_or(0),
        boot_id: read("/proc/sys/kernel/random/boot_id"),
        machine_id: read("/etc/machine-id"),
        system_uuid: read("/sys/class/dmi/id/product_uuid"),
    };
    Arc::new(move || {
        let (desired, stats, cgroups) = (desired.clone(), stats.clone(), cgroups.clone());
        let machine = machine.clone();
        Box::pin(async move {
            let summary = stats.send(GetSummary).await.ok().flatten()?;
            let pods = desired.send(GetDesiredPods).await.ok()?;
            let pods = pods
                .pods
                .iter()
                .filter_map(|p| placement(p, cgroups.as_ref().as_ref()))
                .collect();
            Some(Cadvisor {
                summary,
                pods,
                systemd,
                machine,
            })
        })
    })
}

/// A pod's UID and placement.
fn placement(pod: &Pod, cgroups: Option<&PodCgroups>) -> Option<(String, Placement)> {
    let uid = pod.metadata.uid.clone()?;
    let spec = pod.spec.as_ref()?;
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    let images: HashMap<String, String> = containers
        .filter_map(|c| Some((c.name.clone(), c.image.clone()?)))
        .collect();
    let cgroup = cgroups.map(|c| c.name(pod)).unwrap_or_default();
    Some((uid, Placement { cgroup, images }))
}
