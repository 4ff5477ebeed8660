//! What stays put in a pod's published status as it is recomputed: its start time, the
//! transition times of conditions that did not change; and what the log line of a change
//! reports (phase and readiness).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
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

/// Every time in `status` cut to the second, as the API writes it (the kubelet's
/// `normalizeStatus`): the status recorded is the one the API will hold.
pub(super) fn normalize_times(status: &mut ApiPodStatus) {
    let times = status.start_time.iter_mut();
    let conditions = status.conditions.iter_mut().flatten();
    let conditions = conditions.flat_map(|c| [&mut c.last_probe_time, &mut c.last_transition_time]);
    let mut all: Vec<&mut Time> = times.chain(conditions.flatten()).collect();
    let lists = [
        status.container_statuses.as_mut(),
        status.init_container_statuses.as_mut(),
        status.ephemeral_container_statuses.as_mut(),
    ];
    for c in lists.into_iter().flatten().flatten() {
        for state in [c.state.as_mut(), c.last_state.as_mut()]
            .into_iter()
            .flatten()
        {
            all.extend(state_times(state));
        }
    }
    for t in all {
        if let Ok(whole) = Timestamp::from_second(t.0.as_second()) {
            t.0 = whole;
        }
    }
}

fn state_times(state: &mut ContainerState) -> Vec<&mut Time> {
    let running = state.running.iter_mut().flat_map(|r| r.started_at.as_mut());
    let terminated = state.terminated.iter_mut().flat_map(|t| {
        [t.started_at.as_mut(), t.finished_at.as_mut()]
            .into_iter()
            .flatten()
    });
    running.chain(terminated).collect()
}

/// Whether two copies of a pod differ only in their own status (an API pod's, which the
/// node's writes change): the status the node computes is kept apart.
pub(super) fn same_but_status(a: &Arc<Pod>, b: &Arc<Pod>) -> bool {
    Arc::ptr_eq(a, b) || (a.metadata == b.metadata && a.spec == b.spec)
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

/// A finished pod's status, kept when a later one would make it unfinished (its
/// containers removed): a container it still shows unfinished takes the newer status's
/// word if that shows it terminated, else is terminated as unknown, as the kubelet reports
/// a container it could not find in a terminal pod.
pub(super) fn kept_finished(done: &ApiPodStatus, newer: &ApiPodStatus) -> ApiPodStatus {
    let mut out = done.clone();
    let lists = [
        (&mut out.container_statuses, &newer.container_statuses),
        (
            &mut out.init_container_statuses,
            &newer.init_container_statuses,
        ),
    ];
    for (list, newer) in lists {
        for c in list.iter_mut().flatten() {
            if c.state.as_ref().is_some_and(|s| s.terminated.is_some()) {
                continue;
            }
            let found = newer.iter().flatten().find(|n| {
                n.name == c.name && n.state.as_ref().is_some_and(|s| s.terminated.is_some())
            });
            match found {
                Some(n) => *c = n.clone(),
                None => unknown(c),
            }
        }
    }
    out
}

fn unknown(c: &mut ContainerStatus) {
    c.ready = false;
    c.started = Some(false);
    c.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 137,
            reason: Some("ContainerStatusUnknown".into()),
            message: Some("The container could not be located when the pod was terminated".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: &str, containers: serde_json::Value) -> ApiPodStatus {
        serde_json::from_value(serde_json::json!({"phase": phase, "containerStatuses": containers}))
            .unwrap()
    }

    #[test]
    fn a_kept_finished_status_shows_no_container_running() {
        let done = status(
            "Failed",
            serde_json::json!([
                {"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {}}},
                {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 2}}}
            ]),
        );
        let kept = kept_finished(&done, &status("Pending", serde_json::json!([])));
        let a = &kept.container_statuses.as_ref().unwrap()[0];
        let t = a.state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(
            (t.exit_code, t.reason.as_deref()),
            (137, Some("ContainerStatusUnknown"))
        );
        assert!(!a.ready);
        let b = &kept.container_statuses.as_ref().unwrap()[1];
        assert_eq!(
            b.state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code,
            2
        );
        let newer = status(
            "Failed",
            serde_json::json!([
                {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 143}}}
            ]),
        );
        let kept = kept_finished(&done, &newer);
        let a = &kept.container_statuses.as_ref().unwrap()[0];
        assert_eq!(
            a.state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code,
            143
        );
    }
}
