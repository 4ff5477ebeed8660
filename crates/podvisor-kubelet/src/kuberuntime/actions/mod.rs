//! What a sync must do to bring a pod to its spec (the kubelet's `computePodActions`,
//! Kubernetes 1.35): pure, from the pod, its runtime status and what its probes found, so
//! every rule is tested without a runtime. Init containers and sidecars are planned in
//! `init.rs`.

use k8s_openapi::api::core::v1::{Container, Pod};
use podvisor_core::restart::{restarts_after_exit, restarts_when_killed};
use podvisor_core::{GracePeriod, PodExt, RestartPolicy};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};
use podvisor_probe::{ProbeKind, Verdicts};
use sha2::{Digest, Sha256};

mod init;
mod resize;

use crate::api_status::sandbox::sandbox_changed;
use init::init_container_actions;
pub(crate) use resize::{ContainerResize, Resize, differs, resize_of};

/// Annotation holding the hash of the container spec a container was created from.
pub(crate) const CONTAINER_HASH: &str = "io.kubernetes.container.hash";

fn hash_of(c: &Container) -> String {
    let json = serde_json::to_vec(c).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A short, stable hash of a container's spec but its resources and resize policy (an
/// in-place resize changes those, `resize.rs`): when it changes, the container is
/// replaced. Serialized through serde_json, whose output for these types is deterministic.
pub(crate) fn container_hash(c: &Container) -> String {
    let mut c = c.clone();
    c.resources = None;
    c.resize_policy = None;
    hash_of(&c)
}

/// Whether running instance `s` was made from another spec than `c`. A container made
/// before resources left the hash carries the hash of its whole spec: it is the same spec
/// if that matches.
pub(crate) fn changed(c: &Container, s: &ContainerStatus) -> bool {
    s.annotations
        .get(CONTAINER_HASH)
        .is_some_and(|h| *h != container_hash(c) && *h != hash_of(c))
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
    /// Indices into `spec.initContainers` to start, in order.
    pub init_to_start: Vec<usize>,
    /// Indices into `spec.containers` to (re)start.
    pub containers_to_start: Vec<usize>,
    /// Indices into `spec.ephemeralContainers` never started yet (they never restart).
    pub ephemeral_to_start: Vec<usize>,
    /// Running containers to stop, and why.
    pub containers_to_kill: Vec<ContainerKill>,
    /// Running containers whose CPU and memory change in place.
    pub containers_to_resize: Vec<ContainerResize>,
}

impl PodActions {
    pub(crate) fn is_noop(&self) -> bool {
        !self.kill_pod
            && !self.create_sandbox
            && self.init_to_start.is_empty()
            && self.containers_to_start.is_empty()
            && self.ephemeral_to_start.is_empty()
            && self.containers_to_kill.is_empty()
            && self.containers_to_resize.is_empty()
    }
}

/// Why a running container is stopped by a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KillReason {
    /// Its spec changed.
    Changed,
    LivenessProbe,
    StartupProbe,
    /// Its resize policy restarts it for a resource that changed.
    Resize,
    /// Its state is unknown: stopped before it is started again, so two never run.
    Unknown,
}

/// A running container to stop, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerKill {
    pub id: String,
    pub name: String,
    pub reason: KillReason,
    /// What the `Killing` event says.
    pub message: String,
    /// The failed probe's own grace period, when it has one.
    pub grace: Option<GracePeriod>,
}

impl ContainerKill {
    pub(crate) fn new(s: &ContainerStatus, reason: KillReason, message: String) -> Self {
        Self {
            id: s.id.clone(),
            name: s.name.clone(),
            reason,
            message,
            grace: None,
        }
    }
}

fn exited_ok(s: &ContainerStatus) -> bool {
    s.state == ContainerState::Exited && s.exit_code == 0
}

/// Whether an app container that is not running should be started again (the kubelet's
/// `ShouldContainerBeRestarted`, with container restart rules).
pub(crate) fn should_restart(container: &Container, pod: &Pod, status: &PodStatus) -> bool {
    if pod.is_deleted() {
        return false;
    }
    let Some(s) = status.container(&container.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => restarts_after_exit(container, pod.restart_policy(), s.exit_code),
    }
}

/// What a sync does, in order: the plan's steps. Each is carried out by one verb of the
/// syncer (`syncer/verbs/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Stop every running container and ready sandbox; `replacing` when a new sandbox
    /// follows (otherwise nothing may run any more).
    KillPod {
        replacing: bool,
    },
    /// Stop these containers (they are started again below, if their policy says so).
    KillContainers(Vec<ContainerKill>),
    CreateSandbox {
        attempt: u32,
    },
    /// Fit the pod's cgroup to its containers' new resources, changing these running
    /// containers' CPU and memory in place.
    Resize(Vec<ContainerResize>),
    /// Start the init container at this index of `spec.initContainers`.
    StartInit(usize),
    /// Start the app container at this index of `spec.containers`.
    StartContainer(usize),
    /// Start the ephemeral container at this index of `spec.ephemeralContainers`.
    StartEphemeral(usize),
}

impl Step {
    /// Whether the step starts a container (every other step stops, resizes or makes a
    /// sandbox).
    pub(crate) fn is_start(&self) -> bool {
        matches!(
            self,
            Step::StartInit(_) | Step::StartContainer(_) | Step::StartEphemeral(_)
        )
    }
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
        // A container restarted for a resize starts with its new limits, which its pod's
        // cgroup must hold first, as must those of containers updated in place.
        let resize_restart =
            (self.containers_to_kill.iter()).any(|k| k.reason == KillReason::Resize);
        if !self.containers_to_resize.is_empty() || resize_restart {
            steps.push(Step::Resize(self.containers_to_resize.clone()));
        }
        if self.create_sandbox {
            steps.push(Step::CreateSandbox {
                attempt: self.attempt,
            });
        }
        // As the kubelet's SyncPod: ephemeral containers before init and app containers.
        steps.extend(
            self.ephemeral_to_start
                .iter()
                .map(|&i| Step::StartEphemeral(i)),
        );
        steps.extend(self.init_to_start.iter().map(|&i| Step::StartInit(i)));
        steps.extend(
            self.containers_to_start
                .iter()
                .map(|&i| Step::StartContainer(i)),
        );
        steps
    }
}

/// A fresh sandbox: what to start in it first (the first init container, or every app
/// container that may run), or no sandbox at all when nothing may run.
fn new_sandbox_actions(pod: &Pod, status: &PodStatus, mut actions: PodActions) -> PodActions {
    let policy = pod.restart_policy();
    // A pod that must never restart and already ran keeps its dead sandbox.
    if policy == RestartPolicy::Never && actions.attempt != 0 && !status.containers.is_empty() {
        actions.create_sandbox = false;
        return actions;
    }
    let to_start: Vec<usize> = pod
        .containers()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let once = podvisor_core::restart::container_policy(c).unwrap_or(policy)
                == RestartPolicy::OnFailure;
            !(once && status.container(&c.name).is_some_and(exited_ok))
        })
        .map(|(i, _)| i)
        .collect();
    let any_app_ran = pod
        .containers()
        .iter()
        .any(|c| status.container(&c.name).is_some());
    if to_start.is_empty() && any_app_ran {
        actions.create_sandbox = false;
        return actions;
    }
    if !pod.init_containers().is_empty() {
        actions.init_to_start = vec![0];
        return actions;
    }
    actions.containers_to_start = to_start;
    actions
}

/// The kill of a running instance its probes failed, if they did.
pub(crate) fn probe_kill(
    s: &ContainerStatus,
    what: &str,
    verdicts: &Verdicts,
) -> Option<ContainerKill> {
    let failed = verdicts.failed.get(&s.id)?;
    let (reason, probe) = match failed.kind {
        ProbeKind::Startup => (KillReason::StartupProbe, "startup"),
        _ => (KillReason::LivenessProbe, "liveness"),
    };
    let message = format!("{what} {} failed {probe} probe", s.name);
    let mut kill = ContainerKill::new(s, reason, message);
    kill.grace = failed.grace_seconds.map(GracePeriod::from_seconds);
    Some(kill)
}

/// The app containers to (re)start and kill in a kept sandbox; the pod is killed when
/// nothing runs and nothing may start.
fn app_container_actions(pod: &Pod, status: &PodStatus, verdicts: &Verdicts, a: &mut PodActions) {
    let mut keep = 0;
    for (i, c) in pod.containers().iter().enumerate() {
        let s = status.container(&c.name);
        let Some(s) = s.filter(|s| s.state == ContainerState::Running) else {
            if should_restart(c, pod, status) {
                a.containers_to_start.push(i);
                // It may be running after all: kill it first, so two never run.
                if let Some(s) = s.filter(|s| s.state == ContainerState::Unknown) {
                    let message =
                        r#"Container is in "unknown" state, try killing it before restart"#;
                    a.containers_to_kill.push(ContainerKill::new(
                        s,
                        KillReason::Unknown,
                        message.into(),
                    ));
                }
            }
            continue;
        };
        let mut restart = restarts_when_killed(c, pod.restart_policy());
        let mut kill = if changed(c, s) {
            restart = true;
            let message = format!("Container {} definition changed", c.name);
            ContainerKill::new(s, KillReason::Changed, message)
        } else if let Some(k) = probe_kill(s, "Container", verdicts) {
            k
        } else {
            keep += 1;
            match resize_of(c, s) {
                Resize::Done => continue,
                Resize::Update => {
                    let (id, name) = (s.id.clone(), c.name.clone());
                    let init = false;
                    a.containers_to_resize.push(ContainerResize {
                        index: i,
                        init,
                        id,
                        name,
                    });
                    continue;
                }
                Resize::Restart(message) => {
                    keep -= 1;
                    restart = true;
                    ContainerKill::new(s, KillReason::Resize, message)
                }
            }
        };
        if restart {
            kill.message.push_str(", will be restarted");
            a.containers_to_start.push(i);
        }
        a.containers_to_kill.push(kill);
    }
    if keep == 0 && a.containers_to_start.is_empty() {
        // Running sidecars do not keep a pod alive whose app containers are done.
        a.kill_pod = true;
        a.init_to_start.clear();
    }
}

pub(crate) fn compute_pod_actions(
    pod: &Pod,
    status: &PodStatus,
    verdicts: &Verdicts,
) -> PodActions {
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
    // Ephemeral containers start even before the pod is initialized, once each: one the
    // runtime has seen, running or not, is never started again.
    actions.ephemeral_to_start = pod
        .ephemeral_containers()
        .iter()
        .enumerate()
        .filter(|(_, ec)| status.container(&ec.name).is_none())
        .map(|(i, _)| i)
        .collect();
    let initialized = init_container_actions(pod, status, verdicts, &mut actions);
    if actions.kill_pod || !initialized {
        return actions;
    }
    app_container_actions(pod, status, verdicts, &mut actions);
    actions
}

#[cfg(test)]
mod tests;
