//! Init containers and sidecars in a kept sandbox (the kubelet's
//! `computeInitContainerActions`, Kubernetes 1.35): they start one at a time in spec
//! order; a regular init container must succeed before the next starts, a sidecar
//! (`restartPolicy: Always`) must have started (its startup probe succeeded, if it has
//! one) and then keeps running, restarted whatever the pod's policy says, beside the app
//! containers.
//!
//! The walk goes from the last init container to the first: the newest one with a status
//! tells how far initialization got, and every sidecar before it is kept running.

use k8s_openapi::api::core::v1::{Container, Pod};
use podvisor_core::restart::{container_policy, is_sidecar, restarts_after_exit};
use podvisor_core::{PodExt, RestartPolicy};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};
use podvisor_probe::{ProbeKind, Verdicts};

use super::{
    ContainerKill, ContainerResize, KillReason, PodActions, Resize, changed, probe_kill, resize_of,
};

fn failed(s: &ContainerStatus) -> bool {
    match s.state {
        ContainerState::Exited => s.exit_code != 0 || s.reason == "OOMKilled",
        ContainerState::Unknown => true,
        _ => false,
    }
}

const UNKNOWN: &str = r#"Init container is in "unknown" state, try killing it before restart"#;

/// What a running sidecar needs: `true` when it counts as started (the next init container
/// may go).
fn running_sidecar(
    c: &Container,
    s: &ContainerStatus,
    verdicts: &Verdicts,
    i: usize,
    a: &mut PodActions,
) -> bool {
    if c.startup_probe.is_some() && !verdicts.started.contains(&s.id) {
        let startup_failed = verdicts
            .failed
            .get(&s.id)
            .is_some_and(|f| f.kind == ProbeKind::Startup);
        if startup_failed && let Some(kill) = probe_kill(s, "Init container", verdicts) {
            a.containers_to_kill.push(kill);
            a.init_to_start.push(i);
        }
        return false;
    }
    true
}

/// After a running sidecar counted as started: replaced if its spec changed or its
/// liveness probe failed; resized in place or restarted as its resize policy says.
fn kept_sidecar(
    c: &Container,
    s: &ContainerStatus,
    verdicts: &Verdicts,
    i: usize,
    a: &mut PodActions,
) {
    if changed(c, s) {
        let message = format!("Init container {} definition changed", c.name);
        a.containers_to_kill
            .push(ContainerKill::new(s, KillReason::Changed, message));
        a.init_to_start.push(i);
    } else if let Some(kill) = probe_kill(s, "Init container", verdicts) {
        a.containers_to_kill.push(kill);
        a.init_to_start.push(i);
    } else {
        match resize_of(c, s) {
            Resize::Done => {}
            Resize::Update => a.containers_to_resize.push(ContainerResize {
                index: i,
                init: true,
                id: s.id.clone(),
                name: c.name.clone(),
            }),
            Resize::Restart(message) => {
                let kill = ContainerKill::new(s, KillReason::Resize, message);
                a.containers_to_kill.push(kill);
                a.init_to_start.push(i);
            }
        }
    }
}

/// What one init container's status means for the pod.
enum Outcome {
    /// It was the last one, and it is done (a regular one) or started (a sidecar).
    Initialized,
    /// A regular one failed for good: the pod is killed.
    PodFails,
}

/// One init container and what the walk knows when it reaches it.
struct Step<'a> {
    c: &'a Container,
    s: &'a ContainerStatus,
    i: usize,
    last: bool,
    /// A later init container (or an app container) has a status.
    reached: bool,
    policy: RestartPolicy,
}

impl Step<'_> {
    fn plan(&self, verdicts: &Verdicts, a: &mut PodActions) -> Option<Outcome> {
        let Step {
            c,
            s,
            i,
            last,
            reached,
            policy,
        } = *self;
        let sidecar = is_sidecar(c);
        match s.state {
            ContainerState::Created => a.init_to_start.push(i),
            ContainerState::Running if sidecar => {
                if !running_sidecar(c, s, verdicts, i, a) {
                    return None;
                }
                kept_sidecar(c, s, verdicts, i, a);
                if last {
                    return Some(Outcome::Initialized);
                }
                if !reached {
                    a.init_to_start.push(i + 1);
                }
            }
            ContainerState::Running => {} // wait for it to finish
            ContainerState::Exited if sidecar => a.init_to_start.push(i),
            ContainerState::Exited if failed(s) => {
                if !restarts_after_exit(c, policy, s.exit_code) {
                    return Some(Self::pod_fails(a));
                }
                a.init_to_start.push(i);
            }
            ContainerState::Exited if last => return Some(Outcome::Initialized),
            ContainerState::Exited => a.init_to_start.push(i + 1),
            ContainerState::Unknown => {
                let restart =
                    sidecar || container_policy(c).unwrap_or(policy) != RestartPolicy::Never;
                if !restart {
                    return Some(Self::pod_fails(a));
                }
                let kill = ContainerKill::new(s, KillReason::Unknown, UNKNOWN.into());
                a.containers_to_kill.push(kill);
                a.init_to_start.push(i);
            }
        }
        None
    }

    fn pod_fails(a: &mut PodActions) -> Outcome {
        a.kill_pod = true;
        a.init_to_start.clear();
        Outcome::PodFails
    }
}

/// Plans the init containers; whether the pod has initialized (its app containers may be
/// looked at). A regular init container that failed for good kills the pod.
pub(crate) fn init_container_actions(
    pod: &Pod,
    status: &PodStatus,
    verdicts: &Verdicts,
    a: &mut PodActions,
) -> bool {
    let inits = pod.init_containers();
    if inits.is_empty() {
        return true;
    }
    // An app container that was created or runs means initialization is done (a restart
    // keeps it so, even when the init containers' records are gone).
    let mut initialized = pod.containers().iter().any(|c| {
        status
            .container(&c.name)
            .is_some_and(|s| matches!(s.state, ContainerState::Created | ContainerState::Running))
    });
    let mut reached = initialized;
    let policy = pod.restart_policy();
    let last = inits.len() - 1;
    for (i, c) in inits.iter().enumerate().rev() {
        let sidecar = is_sidecar(c);
        let Some(s) = status.container(&c.name) else {
            if reached && sidecar {
                a.init_to_start.push(i); // its record is gone: start it again
            }
            continue;
        };
        if reached && !sidecar {
            continue; // done for good
        }
        let step = Step {
            c,
            s,
            i,
            last: i == last,
            reached,
            policy,
        };
        match step.plan(verdicts, a) {
            Some(Outcome::PodFails) => return false,
            Some(Outcome::Initialized) => initialized = true,
            None => {}
        }
        reached = true;
    }
    if !reached {
        a.init_to_start.push(0);
    }
    a.init_to_start.reverse();
    a.init_to_start.dedup();
    initialized
}
