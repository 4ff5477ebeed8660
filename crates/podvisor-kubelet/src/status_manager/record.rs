//! What stays put in a pod's published status as it is recomputed: its start time, the
//! transition times of conditions that did not change; and what the log line of a change
//! reports (phase and readiness).

use k8s_openapi::api::core::v1::PodStatus as ApiPodStatus;
use podvisor_core::Phase;

/// A pod's start time and the transition time of every unchanged condition stay.
pub(super) fn keep_times(previous: Option<&ApiPodStatus>, status: &mut ApiPodStatus) {
    status.start_time = previous
        .and_then(|p| p.start_time.clone())
        .or_else(|| Some(podvisor_core::time::now()));
    let old = previous
        .and_then(|p| p.conditions.as_deref())
        .unwrap_or(&[]);
    for c in status.conditions.iter_mut().flatten() {
        c.last_transition_time = old
            .iter()
            .find(|o| o.type_ == c.type_ && o.status == c.status)
            .and_then(|o| o.last_transition_time.clone())
            .or_else(|| Some(podvisor_core::time::now()));
    }
}

pub(super) fn terminal(status: &ApiPodStatus) -> bool {
    status
        .phase
        .as_deref()
        .and_then(|p| p.parse::<Phase>().ok())
        .is_some_and(Phase::is_terminal)
}

pub(super) fn phase_and_ready(status: Option<&ApiPodStatus>) -> (Option<&str>, bool) {
    let phase = status.and_then(|s| s.phase.as_deref());
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True");
    (phase, ready)
}
