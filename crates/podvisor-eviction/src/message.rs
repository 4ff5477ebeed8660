//! The words of an eviction and of a refusal under pressure, as the kubelet writes them,
//! with quantities in Kubernetes' canonical form.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::PodExt;
use podvisor_core::stats::PodStats;

use crate::signal::{Pressure, Resource};

/// The reason of an evicted pod's status, its event and a refusal under pressure.
pub const REASON: &str = "Evicted";

/// A quantity as Kubernetes prints it: bytes in binary units when they divide evenly
/// (`100Mi`), counts in decimal ones (`32k`), else plain.
pub fn quantity(v: i64, bytes: bool) -> String {
    let (base, suffixes): (i64, &[&str]) = match bytes {
        true => (1024, &["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
        false => (1000, &["k", "M", "G", "T", "P", "E"]),
    };
    let (mut n, mut unit) = (v, "");
    for s in suffixes {
        if n == 0 || n % base != 0 {
            break;
        }
        n /= base;
        unit = s;
    }
    format!("{n}{unit}")
}

/// Why the pod is evicted: the resource the node is low on, the threshold and what was
/// available (when known), and each container using more than it requested.
pub fn eviction(
    resource: Resource,
    threshold: Option<(String, String)>,
    pod: &Pod,
    stats: Option<&PodStats>,
) -> String {
    let mut m = format!("The node was low on resource: {}. ", resource.name());
    if let Some((quantity, available)) = threshold {
        m += &format!("Threshold quantity: {quantity}, available: {available}. ");
    }
    let Some(stats) = stats else { return m };
    let declared = pod.containers().iter().chain(pod.init_containers());
    for c in declared {
        let Some(cs) = stats.containers.iter().find(|s| s.name == c.name) else {
            continue;
        };
        let used = match resource {
            Resource::Memory => cs.memory.as_ref().and_then(|m| m.working_set_bytes),
            Resource::EphemeralStorage => cs
                .rootfs
                .as_ref()
                .and_then(|r| r.used_bytes)
                .zip(cs.logs.as_ref().and_then(|l| l.used_bytes))
                .map(|(r, l)| r.saturating_add(l)),
            Resource::Inodes | Resource::Pids => None,
        };
        let requested = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(resource.name()));
        let request_bytes = requested
            .and_then(|q| podvisor_core::quantity::parse_units(&q.0).ok())
            .unwrap_or(0);
        if let Some(used) = used.and_then(|u| i64::try_from(u).ok())
            && used > request_bytes
        {
            let request = requested.map_or("0".to_string(), |q| q.0.clone());
            m += &format!(
                "Container {} was using {}, request is {request}, has larger consumption of {}. ",
                c.name,
                quantity(used, true),
                resource.name()
            );
        }
    }
    m
}

/// A refusal's message: the conditions the node has.
pub fn refusal(conditions: &BTreeSet<Pressure>) -> String {
    let names: Vec<&str> = conditions.iter().map(|p| p.condition()).collect();
    format!("The node had condition: [{}]. ", names.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_print_as_kubernetes_prints_them() {
        assert_eq!(quantity(100 << 20, true), "100Mi");
        assert_eq!(quantity(1536 << 10, true), "1536Ki");
        assert_eq!(quantity(1500, true), "1500");
        assert_eq!(quantity(0, true), "0");
        assert_eq!(quantity(32000, false), "32k");
        assert_eq!(quantity(32768, false), "32768");
    }

    #[test]
    fn the_message_names_the_resource_the_threshold_and_the_greedy_container() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [
                {"name": "hog", "resources": {"requests": {"memory": "10Mi"}}},
                {"name": "calm", "resources": {"requests": {"memory": "1Gi"}}}
            ]}
        }))
        .unwrap();
        let at = podvisor_core::time::now();
        let container = |name: &str, ws: u64| podvisor_core::stats::ContainerStats {
            name: name.into(),
            start_time: None,
            cpu: None,
            memory: Some(podvisor_core::stats::MemoryStats {
                time: at.clone(),
                available_bytes: None,
                usage_bytes: None,
                working_set_bytes: Some(ws),
                rss_bytes: None,
            }),
            rootfs: None,
            logs: None,
            runtime_id: String::new(),
        };
        let stats: PodStats = PodStats {
            containers: vec![container("hog", 300 << 20), container("calm", 1 << 20)],
            ..serde_json::from_value(serde_json::json!({
                "podRef": {"name": "p", "namespace": "default", "uid": "u"},
                "containers": []
            }))
            .unwrap()
        };
        let m = eviction(
            Resource::Memory,
            Some(("100Mi".into(), "50Mi".into())),
            &pod,
            Some(&stats),
        );
        assert_eq!(
            m,
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
             Container hog was using 300Mi, request is 10Mi, has larger consumption of memory. "
        );
        let both = BTreeSet::from([Pressure::Disk, Pressure::Memory]);
        assert_eq!(
            refusal(&both),
            "The node had condition: [MemoryPressure DiskPressure]. "
        );
    }
}
