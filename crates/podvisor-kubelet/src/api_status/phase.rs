//! The pod's phase (the kubelet's `getPhase`, Kubernetes 1.35 with container restart rules):
//! from the containers' API statuses, the pod's restart policy and each container's own
//! policy and rules. Sidecars count while they run and not once they stopped, so a pod
//! whose app containers finished reaches Succeeded or Failed as soon as its sidecars are
//! stopped.

use k8s_openapi::api::core::v1::{ContainerStatus as ApiContainerStatus, Pod};
use podvisor_core::restart::restarts_after_exit;
use podvisor_core::{Phase, PodExt};
use podvisor_cri::{ContainerState, PodStatus};

use super::role::Role;

/// The exit code of a status that shows the container stopped (now, or before the wait
/// it is in).
fn exit_of(s: &ApiContainerStatus) -> Option<i32> {
    let state = s.state.as_ref()?;
    if let Some(t) = &state.terminated {
        return Some(t.exit_code);
    }
    state.waiting.as_ref()?;
    s.last_state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

fn running(s: &ApiContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

#[derive(Default)]
struct Counts {
    pending_init: usize,
    pending_sidecar: usize,
    failed_init_for_good: usize,
    unknown: usize,
    running: usize,
    waiting: usize,
    stopped: usize,
    stopped_for_good: usize,
    succeeded: usize,
}

fn count_inits(pod: &Pod, inits: &[ApiContainerStatus], n: &mut Counts) {
    let policy = pod.restart_policy();
    for (c, s) in pod.init_containers().iter().zip(inits) {
        let exit = exit_of(s);
        match Role::of_init(c) {
            Role::Sidecar if running(s) => {
                n.running += 1;
                n.pending_sidecar += usize::from(s.started != Some(true));
            }
            Role::Sidecar if exit.is_some() => {}
            Role::Sidecar => {
                n.pending_sidecar += 1;
                n.waiting += usize::from(s.state.as_ref().is_some_and(|st| st.waiting.is_some()));
            }
            _ => match exit {
                Some(0) => {}
                Some(code) => {
                    n.failed_init_for_good += usize::from(!restarts_after_exit(c, policy, code));
                }
                None => n.pending_init += 1,
            },
        }
    }
}

fn count_apps(pod: &Pod, apps: &[ApiContainerStatus], n: &mut Counts) {
    let policy = pod.restart_policy();
    for (c, s) in pod.containers().iter().zip(apps) {
        if running(s) {
            n.running += 1;
        } else if let Some(code) = exit_of(s) {
            n.stopped += 1;
            n.succeeded += usize::from(code == 0);
            n.stopped_for_good += usize::from(!restarts_after_exit(c, policy, code));
        } else if s.state.as_ref().is_some_and(|st| st.waiting.is_some()) {
            n.waiting += 1;
        } else {
            n.unknown += 1;
        }
    }
}

/// Whether an app container of the pod's current sandbox has started: the pod got past
/// its init containers (a sidecar restarting later does not make it pending again).
fn has_initialized(pod: &Pod, rt: &PodStatus) -> bool {
    let Some(sandbox) = rt.sandboxes.first() else {
        return false;
    };
    rt.containers.iter().any(|s| {
        s.sandbox_id == sandbox.id
            && s.state != ContainerState::Created
            && pod.containers().iter().any(|c| c.name == s.name)
    })
}

/// The kubelet's phase rules; `terminal`: the pod's termination completed (it was
/// deleted, or must not run), so nothing of it starts again whatever its restart policy.
pub(crate) fn phase(
    pod: &Pod,
    rt: &PodStatus,
    (apps, inits): (&[ApiContainerStatus], &[ApiContainerStatus]),
    terminal: bool,
) -> Phase {
    let mut n = Counts::default();
    count_inits(pod, inits, &mut n);
    count_apps(pod, apps, &mut n);
    if n.failed_init_for_good > 0 {
        return Phase::Failed;
    }
    if n.pending_init > 0 || (n.pending_sidecar > 0 && !has_initialized(pod, rt)) || n.waiting > 0 {
        return Phase::Pending;
    }
    if n.running > 0 && n.unknown == 0 {
        return Phase::Running;
    }
    if n.running == 0 && n.stopped > 0 && n.unknown == 0 {
        // Static pods keep their phase (the kubelet's TODO #116484).
        let will_restart = (pod.is_static() || !terminal) && n.stopped != n.stopped_for_good;
        if will_restart {
            return Phase::Running; // something will start again
        }
        return if n.stopped == n.succeeded {
            Phase::Succeeded
        } else {
            Phase::Failed
        };
    }
    Phase::Pending
}
