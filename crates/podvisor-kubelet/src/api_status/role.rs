//! Where a container stands in its pod, and whether the pod's init containers are done.

use k8s_openapi::api::core::v1::{Container, ContainerStatus as ApiContainerStatus, Pod};
use podvisor_core::PodExt;
use podvisor_core::restart::is_sidecar;

/// Where a container stands in its pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An init container that runs to completion.
    Init,
    /// An init container with `restartPolicy: Always`.
    Sidecar,
    App,
    /// A debugging container added to a running pod: never ready, never restarted.
    Ephemeral,
}

impl Role {
    pub(crate) fn of_init(c: &Container) -> Role {
        if is_sidecar(c) {
            Role::Sidecar
        } else {
            Role::Init
        }
    }
}

/// Whether every init container has done its part: a regular one succeeded, a sidecar
/// started.
pub(crate) fn initialized(pod: &Pod, inits: &[ApiContainerStatus]) -> bool {
    pod.init_containers()
        .iter()
        .zip(inits)
        .all(|(c, s)| match Role::of_init(c) {
            Role::Sidecar => s.started == Some(true),
            _ => s.ready,
        })
}
