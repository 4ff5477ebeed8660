//! In-place resize (the kubelet's `computePodResizeAction`): a running container whose
//! CPU or memory, as the runtime reports them, are not what its spec now asks is updated
//! in place, or restarted when its `resizePolicy` says so for a resource that changed.
//! The container's hash leaves resources out, so a resize alone never replaces it.
//!
//! What the runtime reports is the truth here (the kubelet keeps an "actuated" checkpoint
//! instead): a restarted agent finds what is left to do by comparing the spec with it. A
//! runtime that reported no resources would never be resized in place.

use k8s_openapi::api::core::v1::Container;
use podvisor_cri::{ContainerResources, ContainerStatus, LinuxContainerResources};

use crate::kuberuntime::config::{MEMORY_REQUEST, memory_request, resources};

/// What a running container needs for its spec's resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resize {
    /// It runs with them.
    Done,
    /// Update it in place.
    Update,
    /// Restart it (its resize policy), with the `Killing` event's message.
    Restart(String),
}

/// A running container to update in place: its spec index (in `initContainers` for a
/// sidecar) and instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerResize {
    pub index: usize,
    pub init: bool,
    pub id: String,
    pub name: String,
}

/// Which of CPU and memory the runtime applies otherwise than `want`.
pub(crate) fn differs(want: &LinuxContainerResources, have: &ContainerResources) -> (bool, bool) {
    let quota = if want.cpu_quota > 0 {
        (have.cpu_quota, have.cpu_period) != (want.cpu_quota, want.cpu_period)
    } else {
        have.cpu_quota > 0
    };
    let cpu = have.cpu_shares != want.cpu_shares || quota;
    let memory = have.memory_limit != want.memory_limit_in_bytes;
    (cpu, memory)
}

fn restarts_for(c: &Container, resource: &str) -> bool {
    c.resize_policy
        .iter()
        .flatten()
        .any(|p| p.resource_name == resource && p.restart_policy == "RestartContainer")
}

/// Whether `s` was made with another memory request than `c` asks (one made before the
/// request was recorded is taken as made with it).
pub(crate) fn memory_request_differs(c: &Container, s: &ContainerStatus) -> bool {
    let made = s.annotations.get(MEMORY_REQUEST);
    made.is_some() && made.cloned() != memory_request(c)
}

/// What running instance `s` of `c` needs. A memory request changes nothing the runtime
/// applies: it restarts a container whose policy says so for memory, and is otherwise
/// done as it is admitted (as the kubelet's, which writes no cgroup for it).
pub(crate) fn resize_of(c: &Container, s: &ContainerStatus) -> Resize {
    let (Some(have), Ok(want)) = (s.resources.as_ref(), resources(c, 0)) else {
        return Resize::Done;
    };
    let (cpu, limit) = differs(&want, have);
    let memory = limit || memory_request_differs(c, s);
    if (cpu && restarts_for(c, "cpu")) || (memory && restarts_for(c, "memory")) {
        Resize::Restart(format!("Container {} resize requires restart", c.name))
    } else if cpu || limit {
        Resize::Update
    } else {
        Resize::Done
    }
}
