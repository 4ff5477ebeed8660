//! A container's resources in its status, as the kubelet reports them with in-place
//! resize: `allocatedResources` are the requests its spec asks (the node accepts every
//! resize the API admits), `resources` what it runs with: the spec's, but for what the
//! runtime applies otherwise (a resize not yet carried out): CPU request from the shares,
//! CPU limit from the quota, memory limit from the runtime's. A running container has them
//! when its runtime reports them (kube-apiserver refuses to resize a pod whose running
//! containers do not).
//! While any differs, the pod has the `PodResizeInProgress` condition.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use podvisor_core::PodExt;
use podvisor_core::restart::is_sidecar;
use podvisor_cri::{ContainerResources, ContainerState, ContainerStatus, PodStatus};

use crate::kuberuntime::actions::differs;
use crate::kuberuntime::config::resources;

/// Below these the runtime's value says nothing the spec's does not (the kubelet's
/// `MinShares` and `MinMilliCPULimit`).
const MIN_SHARES: i64 = 2;
const MIN_MILLI_LIMIT: i64 = 10;

fn set(m: &mut Option<BTreeMap<String, Quantity>>, key: &str, q: Option<String>) {
    let map = m.get_or_insert_with(BTreeMap::new);
    match q {
        Some(q) => map.insert(key.to_string(), Quantity(q)),
        None => map.remove(key),
    };
    if map.is_empty() {
        *m = None;
    }
}

/// What running container `c` runs with, `have` as the runtime applies it.
fn actual(c: &Container, have: &ContainerResources) -> ResourceRequirements {
    let mut out = c.resources.clone().unwrap_or_default();
    let Ok(want) = resources(c, 0) else {
        return out;
    };
    if have.cpu_shares != want.cpu_shares && have.cpu_shares.max(want.cpu_shares) > MIN_SHARES {
        let milli = (have.cpu_shares * 1000 + 1023) / 1024;
        set(&mut out.requests, "cpu", Some(format!("{milli}m")));
    }
    let (cpu, memory) = differs(&want, have);
    if cpu && (have.cpu_quota, have.cpu_period) != (want.cpu_quota, want.cpu_period) {
        let milli = (have.cpu_quota > 0 && have.cpu_period > 0)
            .then(|| have.cpu_quota * 1000 / have.cpu_period)
            .filter(|m| *m > MIN_MILLI_LIMIT || want.cpu_quota > 0);
        set(&mut out.limits, "cpu", milli.map(|m| format!("{m}m")));
    }
    if memory {
        let bytes = (have.memory_limit > 0).then(|| have.memory_limit.to_string());
        set(&mut out.limits, "memory", bytes);
    }
    out
}

/// The container's `allocatedResources` and `resources`, its newest instance `newest`.
/// An ephemeral container has none.
pub(super) fn of(
    c: &Container,
    newest: Option<&ContainerStatus>,
    role: super::role::Role,
) -> (
    Option<BTreeMap<String, Quantity>>,
    Option<ResourceRequirements>,
) {
    if role == super::role::Role::Ephemeral {
        return (None, None);
    }
    let allocated = c.resources.as_ref().and_then(|r| r.requests.clone());
    let running = newest.filter(|n| n.state == ContainerState::Running);
    // A runtime that reports none cannot be resized in place: a running
    // container without them tells kube-apiserver so, which then refuses a resize.
    let now = match running.map(|n| n.resources.as_ref()) {
        Some(Some(have)) => Some(actual(c, have)),
        Some(None) => None,
        None => c.resources.clone(),
    };
    (allocated, now)
}

/// Whether a running app container or sidecar runs with other resources than its spec's.
pub(super) fn in_progress(pod: &Pod, rt: &PodStatus) -> bool {
    let sidecars = pod.init_containers().iter().filter(|c| is_sidecar(c));
    pod.containers().iter().chain(sidecars).any(|c| {
        let running = rt
            .containers
            .iter()
            .find(|s| s.name == c.name)
            .filter(|s| s.state == ContainerState::Running);
        match (running.and_then(|s| s.resources.as_ref()), resources(c, 0)) {
            (Some(have), Ok(want)) => differs(&want, have) != (false, false),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(cpu: &str, cpu_limit: &str, memory_limit: &str) -> Container {
        let q = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect(),
            )
        };
        Container {
            name: "app".into(),
            resources: Some(ResourceRequirements {
                requests: q(&[("cpu", cpu), ("memory", "64Mi")]),
                limits: q(&[("cpu", cpu_limit), ("memory", memory_limit)]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn applied(c: &Container) -> ContainerResources {
        let r = resources(c, 0).unwrap();
        ContainerResources {
            cpu_shares: r.cpu_shares,
            cpu_quota: r.cpu_quota,
            cpu_period: r.cpu_period,
            memory_limit: r.memory_limit_in_bytes,
        }
    }

    #[test]
    fn the_spec_once_applied_else_what_the_runtime_applies() {
        let old = container("100m", "200m", "128Mi");
        let new = container("300m", "400m", "256Mi");
        // Carried out: the spec's own quantities.
        assert_eq!(actual(&new, &applied(&new)), new.resources.clone().unwrap());
        // Not yet: what the runtime applies, in the kubelet's units; the memory request
        // is the spec's (no runtime knows it).
        let r = actual(&new, &applied(&old));
        let get = |m: &Quantities, k: &str| m.as_ref().unwrap()[k].0.clone();
        assert_eq!(get(&r.requests, "cpu"), "100m");
        assert_eq!(get(&r.requests, "memory"), "64Mi");
        assert_eq!(get(&r.limits, "cpu"), "200m");
        assert_eq!(get(&r.limits, "memory"), (128i64 << 20).to_string());
    }

    type Quantities = Option<BTreeMap<String, Quantity>>;
}
