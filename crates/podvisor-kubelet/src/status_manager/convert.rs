//! The pod's API status from its runtime status (the kubelet's `generateAPIPodStatus` and
//! `getPhase`): phase, conditions, container statuses with state, last state, restart
//! count and reason. Pure, so every rule is tested without a runtime.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiContainerStatus, Pod, PodCondition, PodIP,
    PodStatus as ApiPodStatus,
};
use podvisor_core::time::from_nanos as time;
use podvisor_core::{Phase, PodExt, RestartPolicy};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};

use crate::protocol::status::{Waiting, WaitingReason};

fn terminated(s: &ContainerStatus) -> ApiState {
    ApiState {
        terminated: Some(ContainerStateTerminated {
            exit_code: s.exit_code,
            reason: Some(if s.reason.is_empty() {
                if s.exit_code == 0 {
                    "Completed"
                } else {
                    "Error"
                }
                .to_string()
            } else {
                s.reason.clone()
            }),
            message: (!s.message.is_empty()).then(|| s.message.clone()),
            started_at: time(s.started_at),
            finished_at: time(s.finished_at),
            container_id: Some(format!("containerd://{}", s.id)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn waiting(reason: WaitingReason, message: &str) -> ApiState {
    ApiState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.as_str().to_string()),
            message: (!message.is_empty()).then(|| message.to_string()),
        }),
        ..Default::default()
    }
}

fn container_status(
    c: &Container,
    rt: &PodStatus,
    waits: &HashMap<String, Waiting>,
    default_waiting: WaitingReason,
) -> ApiContainerStatus {
    let mut instances = rt.containers.iter().filter(|s| s.name == c.name);
    let newest = instances.next();
    let previous = instances.find(|s| s.state == ContainerState::Exited);
    let image = c.image.clone().unwrap_or_default();
    let mut out = ApiContainerStatus {
        name: c.name.clone(),
        image: newest.map_or(image, |n| {
            if n.image.is_empty() {
                c.image.clone().unwrap_or_default()
            } else {
                n.image.clone()
            }
        }),
        image_id: newest.map(|n| n.image_ref.clone()).unwrap_or_default(),
        container_id: newest.map(|n| format!("containerd://{}", n.id)),
        restart_count: newest.map_or(0, |n| n.attempt as i32),
        ..Default::default()
    };
    let wait = waits.get(&c.name);
    match newest {
        Some(n) if n.state == ContainerState::Running => {
            out.state = Some(ApiState {
                running: Some(ContainerStateRunning {
                    started_at: time(n.started_at),
                }),
                ..Default::default()
            });
            out.ready = true;
            out.started = Some(true);
            out.last_state = previous.map(terminated);
        }
        Some(n) if n.state == ContainerState::Exited => match wait {
            // It will start again, after a backoff: waiting, and the exit is its last state.
            Some(w) => {
                out.state = Some(waiting(w.reason, &w.message));
                out.last_state = Some(terminated(n));
            }
            None => {
                out.state = Some(terminated(n));
                out.last_state = previous.map(terminated);
            }
        },
        _ => {
            let (reason, message) =
                wait.map_or((default_waiting, ""), |w| (w.reason, w.message.as_str()));
            out.state = Some(waiting(reason, message));
            out.last_state = newest.and(previous).map(terminated);
        }
    }
    out
}

/// How the init containers stand: (still to run or running, failed).
fn init_counts(pod: &Pod, inits: &[ApiContainerStatus]) -> (usize, usize) {
    let (mut pending, mut failed) = (0, 0);
    for c in pod.init_containers() {
        let Some(s) = inits.iter().find(|s| s.name == c.name) else {
            pending += 1;
            continue;
        };
        let state = s.state.clone().unwrap_or_default();
        let last = s.last_state.as_ref().and_then(|l| l.terminated.as_ref());
        match (&state.running, &state.terminated, last) {
            (Some(_), _, _) => pending += 1,
            (None, Some(t), _) | (None, None, Some(t)) => failed += usize::from(t.exit_code != 0),
            (None, None, None) => pending += 1,
        }
    }
    (pending, failed)
}

/// How the app containers stand.
#[derive(Default)]
struct AppCounts {
    unknown: usize,
    running: usize,
    waiting: usize,
    stopped: usize,
    succeeded: usize,
}

fn app_counts(pod: &Pod, statuses: &[ApiContainerStatus]) -> AppCounts {
    let mut n = AppCounts::default();
    for c in pod.containers() {
        let Some(s) = statuses.iter().find(|s| s.name == c.name) else {
            n.unknown += 1;
            continue;
        };
        let state = s.state.clone().unwrap_or_default();
        if state.running.is_some() {
            n.running += 1;
        } else if let Some(t) = state.terminated {
            n.stopped += 1;
            n.succeeded += usize::from(t.exit_code == 0);
        } else if s
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .is_some()
        {
            n.stopped += 1;
        } else {
            n.waiting += 1;
        }
    }
    n
}

/// The kubelet's phase rules.
pub(crate) fn phase(
    pod: &Pod,
    statuses: &[ApiContainerStatus],
    inits: &[ApiContainerStatus],
) -> Phase {
    let policy = pod.restart_policy();
    let (pending_init, failed_init) = init_counts(pod, inits);
    let n = app_counts(pod, statuses);
    if failed_init > 0 && policy == RestartPolicy::Never {
        return Phase::Failed;
    }
    if pending_init > 0 || n.waiting > 0 {
        return Phase::Pending;
    }
    if n.running > 0 && n.unknown == 0 {
        return Phase::Running;
    }
    if n.running == 0 && n.stopped > 0 && n.unknown == 0 {
        return match policy {
            RestartPolicy::Always => Phase::Running,
            _ if n.stopped == n.succeeded => Phase::Succeeded,
            RestartPolicy::Never => Phase::Failed,
            RestartPolicy::OnFailure => Phase::Running,
        };
    }
    Phase::Pending
}

fn condition(kind: &str, ok: bool, reason: Option<&str>) -> PodCondition {
    PodCondition {
        type_: kind.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        reason: if ok { None } else { reason.map(String::from) },
        ..Default::default()
    }
}

/// The API status of `pod` as its runtime `status` and the last sync's `waits` show it.
pub(crate) fn api_status(
    pod: &Pod,
    rt: &PodStatus,
    waits: &HashMap<String, Waiting>,
    terminating: bool,
) -> ApiPodStatus {
    let inits: Vec<ApiContainerStatus> = pod
        .init_containers()
        .iter()
        .map(|c| container_status(c, rt, waits, WaitingReason::PodInitializing))
        .collect();
    let inits_done = inits.iter().all(|s| {
        s.state
            .as_ref()
            .and_then(|st| st.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0)
    });
    let app_default = if inits_done {
        WaitingReason::ContainerCreating
    } else {
        WaitingReason::PodInitializing
    };
    let statuses: Vec<ApiContainerStatus> = pod
        .containers()
        .iter()
        .map(|c| container_status(c, rt, waits, app_default))
        .collect();
    let phase = phase(pod, &statuses, &inits);
    let containers_ready = !statuses.is_empty() && statuses.iter().all(|s| s.ready);
    let ips: Vec<String> = if pod.host_network() {
        Vec::new()
    } else {
        rt.ips.clone()
    };
    ApiPodStatus {
        phase: Some(phase.as_str().to_string()),
        conditions: Some(vec![
            condition("PodScheduled", true, None),
            condition("Initialized", inits_done, Some("ContainersNotInitialized")),
            condition(
                "ContainersReady",
                containers_ready,
                Some("ContainersNotReady"),
            ),
            condition(
                "Ready",
                containers_ready && !terminating,
                Some("ContainersNotReady"),
            ),
        ]),
        pod_ip: ips.first().cloned(),
        pod_ips: (!ips.is_empty()).then(|| ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect()),
        init_container_statuses: (!inits.is_empty()).then_some(inits),
        container_statuses: Some(statuses),
        ..Default::default()
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
