//! Whether a pod's sandbox must be made anew, from its runtime status.

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::PodExt;
use podvisor_cri::{PodStatus, SandboxState};

/// Whether the pod needs a new sandbox, and with which attempt number.
pub(crate) fn sandbox_changed(pod: &Pod, status: &PodStatus) -> (bool, u32, Option<String>) {
    let Some(newest) = status.sandboxes.first() else {
        return (true, 0, None);
    };
    let ready = status
        .sandboxes
        .iter()
        .filter(|s| s.state == SandboxState::Ready)
        .count();
    let next = newest.attempt + 1;
    if ready > 1 || newest.state != SandboxState::Ready {
        return (true, next, Some(newest.id.clone()));
    }
    if newest.host_network != pod.host_network() {
        return (true, next, Some(newest.id.clone()));
    }
    if !newest.host_network && newest.ip.is_none() {
        return (true, next, Some(newest.id.clone()));
    }
    (false, newest.attempt, Some(newest.id.clone()))
}
