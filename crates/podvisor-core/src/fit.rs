//! Whether a pod fits on the node (the kubelet's predicate admission, for the resources
//! podvisor accounts): pod count, and CPU and memory requests against what the node
//! allows. Shared by the kubelet's admission (every pod it runs) and the API's (a pod
//! created for this node is refused at once when it cannot fit).

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::{PodExt, quantity};

/// What the node offers to pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocatable {
    pub pods: usize,
    pub cpu_milli: i64,
    pub memory_bytes: i64,
}

/// Why a pod was turned away: the kubelet's reasons (`OutOfpods`, `OutOfcpu`,
/// `OutOfmemory`) and a message saying how much was asked and how much was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: &'static str,
    pub message: String,
}

/// A container's request; one that sets only a limit requests its limit, as the API
/// server's defaulting makes it (otherwise a limits-only pod would be admitted for free).
fn request(
    c: &Container,
    resource: &str,
    parse: fn(&str) -> Result<i64, quantity::QuantityError>,
) -> i64 {
    let r = c.resources.as_ref();
    r.and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(resource))
        .or_else(|| {
            r.and_then(|r| r.limits.as_ref())
                .and_then(|l| l.get(resource))
        })
        .and_then(|q| parse(&q.0).ok())
        .unwrap_or(0)
}

/// A pod's effective request: its containers' sum, or its largest init container if that
/// is more (init containers run one at a time, before the others).
pub fn pod_request(pod: &Pod, resource: &str) -> i64 {
    let parse = if resource == "cpu" {
        quantity::parse_milli
    } else {
        quantity::parse_units
    };
    // Saturating: quantities are capped, but a pod may have many containers.
    let apps: i64 = pod
        .containers()
        .iter()
        .map(|c| request(c, resource, parse))
        .fold(0, i64::saturating_add);
    let init = pod
        .init_containers()
        .iter()
        .map(|c| request(c, resource, parse))
        .max()
        .unwrap_or(0);
    apps.max(init)
}

/// What a pod asks of the node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    pub cpu_milli: i64,
    pub memory_bytes: i64,
}

impl Requests {
    pub fn of(pod: &Pod) -> Self {
        Self {
            cpu_milli: pod_request(pod, "cpu"),
            memory_bytes: pod_request(pod, "memory"),
        }
    }
}

/// Whether a pod asking `wanted` fits beside the `active` pods' requests.
pub fn fits(wanted: Requests, active: &[Requests], node: &Allocatable) -> Result<(), Rejection> {
    if active.len() + 1 > node.pods {
        return Err(Rejection {
            reason: "OutOfpods",
            message: format!(
                "Node didn't have enough resource: pods, requested: 1, used: {}, capacity: {}",
                active.len(),
                node.pods
            ),
        });
    }
    let cpu = |r: &Requests| r.cpu_milli;
    let memory = |r: &Requests| r.memory_bytes;
    for (resource, reason, capacity, of) in [
        (
            "cpu",
            "OutOfcpu",
            node.cpu_milli,
            &cpu as &dyn Fn(&Requests) -> i64,
        ),
        ("memory", "OutOfmemory", node.memory_bytes, &memory),
    ] {
        let wanted = of(&wanted);
        let used = active.iter().map(of).fold(0, i64::saturating_add);
        if wanted > 0 && used.saturating_add(wanted) > capacity {
            return Err(Rejection {
                reason,
                message: format!(
                    "Node didn't have enough resource: {resource}, requested: {wanted}, used: {used}, capacity: {capacity}"
                ),
            });
        }
    }
    Ok(())
}

/// Whether `pod` fits beside the `active` pods.
pub fn admit(pod: &Pod, active: &[&Pod], node: &Allocatable) -> Result<(), Rejection> {
    crate::node_admit::intrinsic(pod)?;
    let used: Vec<Requests> = active.iter().map(|p| Requests::of(p)).collect();
    fits(Requests::of(pod), &used, node)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn pod(cpu: &str, mem: &str) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(BTreeMap::from([
                            ("cpu".into(), Quantity(cpu.into())),
                            ("memory".into(), Quantity(mem.into())),
                        ])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn pods_cpu_and_memory_are_accounted() {
        let node = Allocatable {
            pods: 3,
            cpu_milli: 2000,
            memory_bytes: 1 << 30,
        };
        let a = pod("1", "256Mi");
        let b = pod("800m", "256Mi");
        assert_eq!(admit(&a, &[], &node), Ok(()));
        assert_eq!(admit(&b, &[&a], &node), Ok(()));
        let c = pod("300m", "10Mi");
        let r = admit(&c, &[&a, &b], &node).unwrap_err();
        assert_eq!(r.reason, "OutOfcpu");
        assert!(
            r.message
                .contains("requested: 300, used: 1800, capacity: 2000"),
            "{}",
            r.message
        );
        let big = pod("1m", "900Mi");
        assert_eq!(admit(&big, &[&a], &node).unwrap_err().reason, "OutOfmemory");
        // Limits alone count as requests.
        let mut limited = pod("1m", "1Mi");
        let res = limited.spec.as_mut().unwrap().containers[0]
            .resources
            .as_mut()
            .unwrap();
        res.limits = res.requests.take();
        res.limits
            .as_mut()
            .unwrap()
            .insert("memory".into(), Quantity("900Mi".into()));
        assert_eq!(
            admit(&limited, &[&a], &node).unwrap_err().reason,
            "OutOfmemory"
        );
        let tiny = pod("1m", "1Mi");
        assert_eq!(
            admit(&tiny, &[&a, &b, &tiny], &node).unwrap_err().reason,
            "OutOfpods"
        );
    }
}
