//! The pod's API status from its runtime status (the kubelet's `generateAPIPodStatus` and
//! `getPhase`): phase, conditions, container statuses with state, last state, restart
//! count and reason. Pure, so every rule is tested without a runtime.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiContainerStatus, Pod, PodCondition, PodIP,
    PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};
use serde::{Deserialize, Serialize};

use crate::kuberuntime::actions::{
    RestartPolicy, containers, host_network, init_containers, restart_policy,
};

/// Why a container is not running, as the last sync found it (CrashLoopBackOff,
/// ErrImagePull, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    pub reason: String,
    pub message: String,
}

pub fn time(nanos: i64) -> Option<Time> {
    (nanos > 0)
        .then(|| k8s_openapi::jiff::Timestamp::from_nanosecond(nanos as i128).ok())
        .flatten()
        .map(Time)
}

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

fn waiting(reason: &str, message: &str) -> ApiState {
    ApiState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_string()),
            message: (!message.is_empty()).then(|| message.to_string()),
        }),
        ..Default::default()
    }
}

fn container_status(
    c: &Container,
    rt: &PodStatus,
    waits: &HashMap<String, Waiting>,
    default_waiting: &str,
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
                out.state = Some(waiting(&w.reason, &w.message));
                out.last_state = Some(terminated(n));
            }
            None => {
                out.state = Some(terminated(n));
                out.last_state = previous.map(terminated);
            }
        },
        _ => {
            let (reason, message) = wait.map_or((default_waiting, ""), |w| {
                (w.reason.as_str(), w.message.as_str())
            });
            out.state = Some(waiting(reason, message));
            out.last_state = newest.and(previous).map(terminated);
        }
    }
    out
}

/// The kubelet's phase rules.
pub fn phase(
    pod: &Pod,
    statuses: &[ApiContainerStatus],
    inits: &[ApiContainerStatus],
) -> &'static str {
    let policy = restart_policy(pod);
    let find =
        |list: &[ApiContainerStatus], name: &str| list.iter().find(|s| s.name == name).cloned();
    let (mut pending_init, mut failed_init) = (0, 0);
    for c in init_containers(pod) {
        let Some(s) = find(inits, &c.name) else {
            pending_init += 1;
            continue;
        };
        let state = s.state.unwrap_or_default();
        if state.running.is_some() {
            pending_init += 1;
        } else if let Some(t) = state.terminated {
            if t.exit_code != 0 {
                failed_init += 1;
            }
        } else if let Some(t) = s.last_state.and_then(|l| l.terminated) {
            if t.exit_code != 0 {
                failed_init += 1;
            }
        } else {
            pending_init += 1;
        }
    }
    let (mut unknown, mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0, 0);
    for c in containers(pod) {
        let Some(s) = find(statuses, &c.name) else {
            unknown += 1;
            continue;
        };
        let state = s.state.unwrap_or_default();
        if state.running.is_some() {
            running += 1;
        } else if let Some(t) = state.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if s.last_state.and_then(|l| l.terminated).is_some() {
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    if failed_init > 0 && policy == RestartPolicy::Never {
        return "Failed";
    }
    if pending_init > 0 || waiting > 0 {
        return "Pending";
    }
    if running > 0 && unknown == 0 {
        return "Running";
    }
    if running == 0 && stopped > 0 && unknown == 0 {
        return match policy {
            RestartPolicy::Always => "Running",
            _ if stopped == succeeded => "Succeeded",
            RestartPolicy::Never => "Failed",
            RestartPolicy::OnFailure => "Running",
        };
    }
    "Pending"
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
pub fn api_status(
    pod: &Pod,
    rt: &PodStatus,
    waits: &HashMap<String, Waiting>,
    terminating: bool,
) -> ApiPodStatus {
    let inits: Vec<ApiContainerStatus> = init_containers(pod)
        .iter()
        .map(|c| container_status(c, rt, waits, "PodInitializing"))
        .collect();
    let inits_done = inits.iter().all(|s| {
        s.state
            .as_ref()
            .and_then(|st| st.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0)
    });
    let app_default = if inits_done {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let statuses: Vec<ApiContainerStatus> = containers(pod)
        .iter()
        .map(|c| container_status(c, rt, waits, app_default))
        .collect();
    let phase = phase(pod, &statuses, &inits);
    let containers_ready = !statuses.is_empty() && statuses.iter().all(|s| s.ready);
    let ips: Vec<String> = if host_network(pod) {
        Vec::new()
    } else {
        rt.ips.clone()
    };
    ApiPodStatus {
        phase: Some(phase.to_string()),
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
