//! What a sync must do to bring a pod to its spec (the kubelet's `computePodActions`):
//! pure, from the pod and its runtime status, so every rule is tested without a runtime.

use k8s_openapi::api::core::v1::{Container, Pod};
use podvisor_core::{PodExt, RestartPolicy};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus, SandboxState};
use sha2::{Digest, Sha256};

/// Annotation holding the hash of the container spec a container was created from.
pub(crate) const CONTAINER_HASH: &str = "io.kubernetes.container.hash";

/// A short, stable hash of a container's spec: when it changes, the container is
/// replaced. Serialized through serde_json, whose output for these types is deterministic.
pub(crate) fn container_hash(c: &Container) -> String {
    let json = serde_json::to_vec(c).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The sync's plan for one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PodActions {
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
    /// Running containers to stop, and why.
    pub containers_to_kill: Vec<ContainerKill>,
}

impl PodActions {
    pub(crate) fn is_noop(&self) -> bool {
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
    if newest.host_network != pod.host_network() {
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
pub(crate) fn should_restart(container: &Container, pod: &Pod, status: &PodStatus) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = status.container(&container.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => match pod.restart_policy() {
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
    let inits = pod.init_containers();
    if inits.is_empty() {
        return (None, None, true);
    }
    // A running app container means the init containers all ran (a restart keeps them).
    if pod.containers().iter().any(|c| {
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

/// What a sync does, in order: the plan's steps. Each is carried out by one verb of the
/// syncer (`verbs/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Stop every running container and ready sandbox; `replacing` when a new sandbox
    /// follows (otherwise nothing may run any more).
    KillPod {
        replacing: bool,
    },
    /// Stop these containers (they are started again below).
    KillContainers(Vec<ContainerKill>),
    CreateSandbox {
        attempt: u32,
    },
    /// Start the init container at this index of `spec.initContainers`.
    StartInit(usize),
    /// Start the app container at this index of `spec.containers`.
    StartContainer(usize),
}

/// A running container to stop, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerKill {
    pub id: String,
    pub name: String,
    pub reason: &'static str,
}

impl PodActions {
    /// The plan as steps, in the order a sync takes them.
    pub(crate) fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.kill_pod {
            steps.push(Step::KillPod {
                replacing: self.create_sandbox,
            });
            if !self.create_sandbox {
                return steps;
            }
        } else if !self.containers_to_kill.is_empty() {
            steps.push(Step::KillContainers(self.containers_to_kill.clone()));
        }
        if self.create_sandbox {
            steps.push(Step::CreateSandbox {
                attempt: self.attempt,
            });
        }
        match self.next_init_container {
            Some(i) => steps.push(Step::StartInit(i)),
            None => steps.extend(
                self.containers_to_start
                    .iter()
                    .map(|&i| Step::StartContainer(i)),
            ),
        }
        steps
    }
}

/// A fresh sandbox: what to start in it first (the first init container, or every app
/// container the policy lets run), or no sandbox at all when nothing may run.
fn new_sandbox_actions(pod: &Pod, status: &PodStatus, mut actions: PodActions) -> PodActions {
    let policy = pod.restart_policy();
    // A pod that must never restart and already ran keeps its dead sandbox. OnFailure
    // pods get a new one for what failed (below: nothing to start, no sandbox).
    if policy == RestartPolicy::Never && actions.attempt != 0 && !status.containers.is_empty() {
        actions.create_sandbox = false;
        return actions;
    }
    if !pod.init_containers().is_empty() {
        actions.next_init_container = Some(0);
        return actions;
    }
    actions.containers_to_start = pod
        .containers()
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
    actions
}

/// The app containers to (re)start and kill in a kept sandbox; the pod is killed when
/// nothing runs and nothing may start.
fn app_container_actions(pod: &Pod, status: &PodStatus, actions: &mut PodActions) {
    let mut keep = 0;
    for (i, c) in pod.containers().iter().enumerate() {
        let s = status.container(&c.name);
        match s {
            Some(s) if s.state == ContainerState::Running => {
                let want = container_hash(c);
                if s.annotations
                    .get(CONTAINER_HASH)
                    .is_some_and(|h| *h != want)
                {
                    actions.containers_to_start.push(i);
                    actions.containers_to_kill.push(ContainerKill {
                        id: s.id.clone(),
                        name: c.name.clone(),
                        reason: "container spec changed",
                    });
                } else {
                    keep += 1;
                }
            }
            _ if should_restart(c, pod, status) => {
                actions.containers_to_start.push(i);
                // It may be running after all: kill it first, so two never run.
                if let Some(s) = s.filter(|s| s.state == ContainerState::Unknown) {
                    actions.containers_to_kill.push(ContainerKill {
                        id: s.id.clone(),
                        name: c.name.clone(),
                        reason: "container state unknown",
                    });
                }
            }
            _ => {}
        }
    }
    if keep == 0 && actions.containers_to_start.is_empty() {
        actions.kill_pod = true;
    }
}

pub(crate) fn compute_pod_actions(pod: &Pod, status: &PodStatus) -> PodActions {
    let (create_sandbox, attempt, sandbox_id) = sandbox_changed(pod, status);
    let mut actions = PodActions {
        kill_pod: create_sandbox,
        create_sandbox,
        sandbox_id,
        attempt,
        ..Default::default()
    };
    if create_sandbox {
        return new_sandbox_actions(pod, status, actions);
    }
    let (failed, next, done) = next_init_container(pod, status);
    if !done {
        if let Some(i) = next {
            if failed.is_some() && pod.restart_policy() == RestartPolicy::Never {
                actions.kill_pod = true;
            } else {
                actions.next_init_container = Some(i);
            }
        }
        return actions;
    }
    app_container_actions(pod, status, &mut actions);
    actions
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
