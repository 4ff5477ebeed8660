//! The pod's API status from its runtime status (the kubelet's `generateAPIPodStatus`):
//! container statuses with state, last state, restart count, `started` and `ready`, then
//! the phase (`phase.rs`) and the conditions (`conditions.rs`). Pure, so every rule is
//! tested without a runtime.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiContainerStatus, Pod, PodIP,
    PodStatus as ApiPodStatus,
};
use podvisor_core::PodExt;
use podvisor_core::restart::is_sidecar;
use podvisor_core::time::from_nanos as time;
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};

use super::conditions::conditions;
use super::phase::phase;
use super::probes::{ProbeView, container_id};
use crate::protocol::status::{Waiting, WaitingReason};

/// Where a container stands in its pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An init container that runs to completion.
    Init,
    /// An init container with `restartPolicy: Always`.
    Sidecar,
    App,
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
            container_id: Some(container_id(&s.id)),
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

/// What one container's status is made of.
struct Parts<'a> {
    c: &'a Container,
    role: Role,
    rt: &'a PodStatus,
    wait: Option<&'a Waiting>,
    default_waiting: WaitingReason,
    view: ProbeView<'a>,
}

fn container_status(p: &Parts<'_>) -> ApiContainerStatus {
    let c = p.c;
    let mut instances = p.rt.containers.iter().filter(|s| s.name == c.name);
    let newest = instances.next();
    let previous = instances.find(|s| s.state == ContainerState::Exited);
    let image = c.image.clone().unwrap_or_default();
    let mut out = ApiContainerStatus {
        name: c.name.clone(),
        image: newest
            .map(|n| n.image.clone())
            .filter(|i| !i.is_empty())
            .unwrap_or(image),
        image_id: newest.map(|n| n.image_ref.clone()).unwrap_or_default(),
        container_id: newest.map(|n| container_id(&n.id)),
        restart_count: newest.map_or(0, |n| n.attempt as i32),
        started: Some(false),
        ..Default::default()
    };
    // A wait about one instance (its postStart hook runs) holds even while it runs.
    let wait_on = |n: &ContainerStatus| p.wait.filter(|w| w.instance.as_deref() == Some(&n.id));
    let wait_any = p.wait.filter(|w| w.instance.is_none());
    match newest {
        Some(n) if n.state == ContainerState::Running && wait_on(n).is_some() => {
            let w = wait_on(n).expect("checked");
            out.state = Some(waiting(w.reason, &w.message));
            out.last_state = previous.map(terminated);
        }
        Some(n) if n.state == ContainerState::Running => {
            out.state = Some(ApiState {
                running: Some(ContainerStateRunning {
                    started_at: time(n.started_at),
                }),
                ..Default::default()
            });
            out.started = Some(p.view.started(c, &n.id));
            out.ready = p.role != Role::Init && p.view.ready(c, &n.id);
            out.last_state = previous.map(terminated);
        }
        Some(n) if n.state == ContainerState::Exited => {
            out.ready = p.role == Role::Init && n.exit_code == 0;
            match wait_any {
                // It will start again, after a backoff: waiting, and the exit is its last state.
                Some(w) => {
                    out.state = Some(waiting(w.reason, &w.message));
                    out.last_state = Some(terminated(n));
                }
                None => {
                    out.state = Some(terminated(n));
                    out.last_state = previous.map(terminated);
                }
            }
        }
        _ => {
            let (reason, message) =
                wait_any.map_or((p.default_waiting, ""), |w| (w.reason, w.message.as_str()));
            out.state = Some(waiting(reason, message));
            out.last_state = newest.and(previous).map(terminated);
        }
    }
    out
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

/// The API status of `pod` as its runtime `status`, the last sync's `waits` and the
/// probes (`view`) show it.
pub(crate) fn api_status(
    pod: &Pod,
    rt: &PodStatus,
    waits: &HashMap<String, Waiting>,
    terminated: bool,
    view: ProbeView<'_>,
) -> ApiPodStatus {
    let parts = |c, role, default_waiting| Parts {
        c,
        role,
        rt,
        wait: waits.get(&c.name),
        default_waiting,
        view,
    };
    let inits: Vec<ApiContainerStatus> = pod
        .init_containers()
        .iter()
        .map(|c| container_status(&parts(c, Role::of_init(c), WaitingReason::PodInitializing)))
        .collect();
    let app_default = if initialized(pod, &inits) {
        WaitingReason::ContainerCreating
    } else {
        WaitingReason::PodInitializing
    };
    let statuses: Vec<ApiContainerStatus> = pod
        .containers()
        .iter()
        .map(|c| container_status(&parts(c, Role::App, app_default)))
        .collect();
    let phase = phase(pod, rt, &statuses, &inits);
    let ips: Vec<String> = if pod.host_network() {
        Vec::new()
    } else {
        rt.ips.clone()
    };
    ApiPodStatus {
        phase: Some(phase.as_str().to_string()),
        conditions: Some(conditions(pod, rt, phase, &statuses, &inits, terminated)),
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
