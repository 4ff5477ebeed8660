//! The pod's conditions, in the kubelet's order and words (`status/generate.go`):
//! PodReadyToStartContainers (the sandbox and its network are up), Initialized (every init
//! container succeeded and every sidecar started), Ready and ContainersReady (the app
//! containers and the sidecars ready; regular init containers do not count), and
//! PodScheduled.

use k8s_openapi::api::core::v1::{ContainerStatus as ApiContainerStatus, Pod, PodCondition};
use podvisor_core::{Phase, PodExt};
use podvisor_cri::PodStatus;

use super::role::{Role, initialized};
use super::sandbox::sandbox_changed;

fn condition(kind: &str, ok: bool, reason: &str, message: String) -> PodCondition {
    PodCondition {
        type_: kind.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then_some(message),
        ..Default::default()
    }
}

fn names(list: &[&str]) -> String {
    format!("[{}]", list.join(" "))
}

fn initialized_condition(
    pod: &Pod,
    phase: Phase,
    apps: &[ApiContainerStatus],
    inits: &[ApiContainerStatus],
) -> PodCondition {
    let started = |s: &ApiContainerStatus| {
        s.state
            .as_ref()
            .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
    };
    if phase == Phase::Succeeded {
        return condition("Initialized", true, "PodCompleted", String::new());
    }
    if initialized(pod, inits) || apps.iter().any(started) {
        return condition("Initialized", true, "", String::new());
    }
    let incomplete: Vec<&str> = pod
        .init_containers()
        .iter()
        .zip(inits)
        .filter(|(c, s)| match Role::of_init(c) {
            Role::Sidecar => s.started != Some(true),
            _ => !s.ready,
        })
        .map(|(c, _)| c.name.as_str())
        .collect();
    let message = format!("containers with incomplete status: {}", names(&incomplete));
    condition("Initialized", false, "ContainersNotInitialized", message)
}

/// ContainersReady: the app containers and the sidecars.
fn containers_ready(
    pod: &Pod,
    phase: Phase,
    apps: &[ApiContainerStatus],
    inits: &[ApiContainerStatus],
) -> PodCondition {
    match phase {
        Phase::Succeeded => {
            return condition("ContainersReady", false, "PodCompleted", String::new());
        }
        Phase::Failed => return condition("ContainersReady", false, "PodFailed", String::new()),
        _ => {}
    }
    let sidecars = pod
        .init_containers()
        .iter()
        .zip(inits)
        .filter(|(c, _)| Role::of_init(c) == Role::Sidecar)
        .map(|(_, s)| s);
    let unready: Vec<&str> = sidecars
        .chain(apps)
        .filter(|s| !s.ready)
        .map(|s| s.name.as_str())
        .collect();
    if unready.is_empty() {
        return condition("ContainersReady", true, "", String::new());
    }
    let message = format!("containers with unready status: {}", names(&unready));
    condition("ContainersReady", false, "ContainersNotReady", message)
}

/// Why the pod's readiness gates hold it back, if they do: a condition each names that
/// others set (on the pod's status, as the API has it) and that is missing or not True,
/// in the kubelet's words (`GeneratePodReadyCondition`).
fn gates_unready(pod: &Pod) -> Option<String> {
    let gates = pod.spec.as_ref()?.readiness_gates.as_deref()?;
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    let unready: Vec<String> = gates
        .iter()
        .filter_map(|g| {
            let t = &g.condition_type;
            match conditions.unwrap_or(&[]).iter().find(|c| c.type_ == *t) {
                None => Some(format!(
                    "corresponding condition of pod readiness gate {t:?} does not exist."
                )),
                Some(c) if c.status != "True" => Some(format!(
                    "the status of pod readiness gate {t:?} is not \"True\", but {}",
                    c.status
                )),
                Some(_) => None,
            }
        })
        .collect();
    (!unready.is_empty()).then(|| unready.join(", "))
}

/// Every condition the kubelet owns, in its order.
pub(crate) fn conditions(
    pod: &Pod,
    rt: &PodStatus,
    phase: Phase,
    apps: &[ApiContainerStatus],
    inits: &[ApiContainerStatus],
    terminated: bool,
) -> Vec<PodCondition> {
    let sandbox_ready = !rt.sandboxes.is_empty() && !sandbox_changed(pod, rt).0;
    let ready_to_start = condition(
        "PodReadyToStartContainers",
        sandbox_ready,
        "",
        String::new(),
    );
    let containers = containers_ready(pod, phase, apps, inits);
    let mut ready = PodCondition {
        type_: "Ready".into(),
        ..containers.clone()
    };
    if ready.status == "True"
        && let Some(unready) = gates_unready(pod)
    {
        ready = condition("Ready", false, "ReadinessGatesNotReady", unready);
    }
    // Stopped for good (its termination completed): whatever the runtime still shows.
    if terminated && ready.status == "True" {
        ready = condition("Ready", false, "ContainersNotReady", String::new());
    }
    let mut all = vec![
        ready_to_start,
        initialized_condition(pod, phase, apps, inits),
        ready,
        containers,
        condition("PodScheduled", true, "", String::new()),
    ];
    if !phase.is_terminal() && super::resize::in_progress(pod, rt) {
        all.push(condition("PodResizeInProgress", true, "", String::new()));
    }
    // The pod's generation each was computed for (the kubelet's pod generation tracking).
    for c in &mut all {
        c.observed_generation = pod.metadata.generation;
    }
    all
}
