//! What a pod's runtime status means, as pure functions every rule is tested on without a
//! runtime: its API status (the kubelet's `generateAPIPodStatus`: container statuses with
//! state, last state, restart count, `started` and `ready`, then the phase (`phase.rs`)
//! and the conditions (`conditions.rs`)), and whether its sandbox must be made anew
//! (`sandbox.rs`). The status manager publishes it; the CRI syncer decides by it.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiContainerStatus, HostIP, Pod, PodIP,
    PodStatus as ApiPodStatus,
};
use podvisor_core::PodExt;
use podvisor_core::time::from_nanos as time;
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};

mod conditions;
pub(crate) mod deadline;
mod phase;
pub(crate) mod probes;
mod resize;
mod role;
pub(crate) mod sandbox;

use conditions::conditions;
use phase::phase;
use probes::{ProbeView, container_id};
pub(crate) use role::{Role, initialized};

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

fn api_user(u: &podvisor_cri::ContainerUser) -> k8s_openapi::api::core::v1::ContainerUser {
    k8s_openapi::api::core::v1::ContainerUser {
        linux: Some(k8s_openapi::api::core::v1::LinuxContainerUser {
            uid: u.uid,
            gid: u.gid,
            supplemental_groups: Some(u.supplemental_groups.clone()),
        }),
    }
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
        user: newest.and_then(|n| n.user.as_ref()).map(api_user),
        ..Default::default()
    };
    (out.allocated_resources, out.resources) = resize::of(c, newest, p.role);
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
            out.ready = !matches!(p.role, Role::Init | Role::Ephemeral) && p.view.ready(c, &n.id);
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
    // Ephemeral containers count for neither the phase nor the conditions.
    let ephemeral_specs: Vec<Container> = pod
        .ephemeral_containers()
        .iter()
        .map(podvisor_core::pod::ephemeral_as_container)
        .collect();
    let ephemeral: Vec<ApiContainerStatus> = ephemeral_specs
        .iter()
        .map(|c| container_status(&parts(c, Role::Ephemeral, WaitingReason::ContainerCreating)))
        .collect();
    let deadline = deadline::exceeded(pod, rt, podvisor_core::time::now_nanos());
    let phase = match deadline {
        true => podvisor_core::Phase::Failed,
        false => phase(pod, rt, (&statuses, &inits), terminated),
    };
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
        ephemeral_container_statuses: (!ephemeral.is_empty()).then_some(ephemeral),
        reason: deadline.then(|| deadline::REASON.to_string()),
        message: deadline.then(|| deadline::MESSAGE.to_string()),
        qos_class: Some(podvisor_core::qos::qos_class(pod).as_str().to_string()),
        observed_generation: pod.metadata.generation,
        ..Default::default()
    }
}

/// The node's address as the pod's `hostIP(s)`, and a host-network pod's `podIP(s)`, as
/// the kubelet sets them.
pub(crate) fn stamp_host(pod: &Pod, status: &mut ApiPodStatus, host_ip: Option<&str>) {
    let Some(ip) = host_ip else { return };
    status.host_ip = Some(ip.to_string());
    status.host_ips = Some(vec![HostIP { ip: ip.to_string() }]);
    if pod.host_network() {
        status.pod_ip = Some(ip.to_string());
        status.pod_ips = Some(vec![PodIP { ip: ip.to_string() }]);
    }
}

#[cfg(test)]
mod tests;
