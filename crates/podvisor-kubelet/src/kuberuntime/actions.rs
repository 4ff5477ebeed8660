//! What a sync must do to bring a pod to its spec (the kubelet's `computePodActions`):
//! pure, from the pod and its runtime status, so every rule is tested without a runtime.

use k8s_openapi::api::core::v1::{Container, Pod};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus, SandboxState};
use sha2::{Digest, Sha256};

/// Annotation holding the hash of the container spec a container was created from.
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

pub fn restart_policy(pod: &Pod) -> RestartPolicy {
    match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
        Some("Never") => RestartPolicy::Never,
        Some("OnFailure") => RestartPolicy::OnFailure,
        _ => RestartPolicy::Always,
    }
}

pub fn host_network(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

pub fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
}

pub fn containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or(&[])
}

/// A short, stable hash of a container's spec: when it changes, the container is
/// replaced. Serialized through serde_json, whose output for these types is deterministic.
pub fn container_hash(c: &Container) -> String {
    let json = serde_json::to_vec(c).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The sync's plan for one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodActions {
    /// Stop every container and the sandbox (sandbox replaced, or nothing left to run).
    pub kill_pod: bool,
    pub create_sandbox: bool,
    /// The sandbox to run containers in, when it is kept.
    pub sandbox_id: Option<String>,
    /// Attempt number of the sandbox to create.
    pub attempt: u32,
    /// Index into `spec.initContainers` of the init container to start next.
    pub next_init_container: Option<usize>,
    /// Indices into `spec.containers` to (re)start.
    pub containers_to_start: Vec<usize>,
    /// Running containers to stop: (container id, name, why).
    pub containers_to_kill: Vec<(String, String, String)>,
}

impl PodActions {
    pub fn is_noop(&self) -> bool {
        !self.kill_pod
            && !self.create_sandbox
            && self.next_init_container.is_none()
            && self.containers_to_start.is_empty()
            && self.containers_to_kill.is_empty()
    }
}

/// Whether the pod needs a new sandbox, and with which attempt number.
fn sandbox_changed(pod: &Pod, status: &PodStatus) -> (bool, u32, Option<String>) {
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
    if newest.host_network != host_network(pod) {
        return (true, next, Some(newest.id.clone()));
    }
    if !newest.host_network && newest.ip.is_none() {
        return (true, next, Some(newest.id.clone()));
    }
    (false, newest.attempt, Some(newest.id.clone()))
}

fn exited_ok(s: &ContainerStatus) -> bool {
    s.state == ContainerState::Exited && s.exit_code == 0
}

fn init_failed(s: &ContainerStatus) -> bool {
    match s.state {
        ContainerState::Exited => s.exit_code != 0,
        ContainerState::Unknown => true,
        _ => false,
    }
}

/// Whether a container that is not running should be started again.
pub fn should_restart(container: &Container, pod: &Pod, status: &PodStatus) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = status.container(&container.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => match restart_policy(pod) {
            RestartPolicy::Never => false,
            RestartPolicy::OnFailure => s.exit_code != 0,
            RestartPolicy::Always => true,
        },
    }
}

/// The init container to look at next: `(last failed status, next to run, all done)`.
fn next_init_container<'a>(
    pod: &Pod,
    status: &'a PodStatus,
) -> (Option<&'a ContainerStatus>, Option<usize>, bool) {
    let inits = init_containers(pod);
    if inits.is_empty() {
        return (None, None, true);
    }
    // A running app container means the init containers all ran (a restart keeps them).
    if containers(pod).iter().any(|c| {
        status
            .container(&c.name)
            .is_some_and(|s| s.state == ContainerState::Running)
    }) {
        return (None, None, true);
    }
    for (i, c) in inits.iter().enumerate().rev() {
        if let Some(s) = status.container(&c.name).filter(|s| init_failed(s)) {
            return (Some(s), Some(i), false);
        }
    }
    for (i, c) in inits.iter().enumerate().rev() {
        let Some(s) = status.container(&c.name) else {
            continue;
        };
        match s.state {
            ContainerState::Running => return (None, None, false),
            ContainerState::Exited if i == inits.len() - 1 => return (None, None, true),
            ContainerState::Exited => return (None, Some(i + 1), false),
            _ => return (None, Some(i), false),
        }
    }
    (None, Some(0), false)
}

pub fn compute_pod_actions(pod: &Pod, status: &PodStatus) -> PodActions {
    let (create_sandbox, attempt, sandbox_id) = sandbox_changed(pod, status);
    let policy = restart_policy(pod);
    let mut actions = PodActions {
        kill_pod: create_sandbox,
        create_sandbox,
        sandbox_id: sandbox_id.clone(),
        attempt,
        ..Default::default()
    };
    if create_sandbox {
        // A pod that must never restart and already ran keeps its dead sandbox. OnFailure
        // pods get a new one for what failed (below: nothing to start, no sandbox).
        if policy == RestartPolicy::Never && attempt != 0 && !status.containers.is_empty() {
            actions.create_sandbox = false;
            return actions;
        }
        if !init_containers(pod).is_empty() {
            actions.next_init_container = Some(0);
            return actions;
        }
        actions.containers_to_start = containers(pod)
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                !(policy == RestartPolicy::OnFailure
                    && status.container(&c.name).is_some_and(exited_ok))
            })
            .map(|(i, _)| i)
            .collect();
        if actions.containers_to_start.is_empty() {
            actions.create_sandbox = false;
        }
        return actions;
    }

    let (failed, next, done) = next_init_container(pod, status);
    if !done {
        if let Some(i) = next {
            if failed.is_some() && policy == RestartPolicy::Never {
                actions.kill_pod = true;
            } else {
                actions.next_init_container = Some(i);
            }
        }
        return actions;
    }

    let mut keep = 0;
    for (i, c) in containers(pod).iter().enumerate() {
        let s = status.container(&c.name);
        match s {
            Some(s) if s.state == ContainerState::Running => {
                let want = container_hash(c);
                if s.annotations
                    .get(CONTAINER_HASH)
                    .is_some_and(|h| *h != want)
                {
                    actions.containers_to_start.push(i);
                    actions.containers_to_kill.push((
                        s.id.clone(),
                        c.name.clone(),
                        "container spec changed".into(),
                    ));
                } else {
                    keep += 1;
                }
            }
            _ => {
                if should_restart(c, pod, status) {
                    actions.containers_to_start.push(i);
                    // It may be running after all: kill it first, so two never run.
                    if let Some(s) = s.filter(|s| s.state == ContainerState::Unknown) {
                        actions.containers_to_kill.push((
                            s.id.clone(),
                            c.name.clone(),
                            "container state unknown".into(),
                        ));
                    }
                }
            }
        }
    }
    if keep == 0 && actions.containers_to_start.is_empty() {
        actions.kill_pod = true;
    }
    actions
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
