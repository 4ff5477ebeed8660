use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use podvisor_cri::{ContainerStatus, PodRef, SandboxState, SandboxStatus};
use podvisor_probe::{ProbeKind, Verdicts};

use super::*;

fn container(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        ..Default::default()
    }
}

fn pod(policy: &str, inits: &[&str], apps: &[&str]) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = Some("u1".into());
    p.spec = Some(PodSpec {
        restart_policy: Some(policy.into()),
        init_containers: (!inits.is_empty()).then(|| inits.iter().map(|n| container(n)).collect()),
        containers: apps.iter().map(|n| container(n)).collect(),
        ..Default::default()
    });
    p
}

fn sandbox(attempt: u32, ready: bool) -> SandboxStatus {
    SandboxStatus {
        id: format!("sb{attempt}"),
        pod: PodRef::default(),
        attempt,
        state: if ready {
            SandboxState::Ready
        } else {
            SandboxState::NotReady
        },
        created_at: attempt as i64,
        ip: Some("10.88.0.2".into()),
        additional_ips: vec![],
        host_network: false,
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
    }
}

/// A container status; `exit: None` means running.
fn c(pod: &Pod, name: &str, created: i64, exit: Option<i32>) -> ContainerStatus {
    let ephemeral: Vec<Container> = pod
        .ephemeral_containers()
        .iter()
        .map(podvisor_core::pod::ephemeral_as_container)
        .collect();
    let spec = pod
        .init_containers()
        .iter()
        .chain(pod.containers())
        .chain(&ephemeral)
        .find(|c| c.name == name)
        .unwrap();
    ContainerStatus {
        id: format!("{name}-{created}"),
        sandbox_id: String::new(),
        name: name.into(),
        attempt: 0,
        state: if exit.is_some() {
            ContainerState::Exited
        } else {
            ContainerState::Running
        },
        created_at: created,
        started_at: created,
        finished_at: 0,
        exit_code: exit.unwrap_or(0),
        image: String::new(),
        image_ref: String::new(),
        reason: String::new(),
        message: String::new(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::from([(CONTAINER_HASH.to_string(), container_hash(spec))]),
        log_path: String::new(),
        user: None,
        resources: None,
    }
}

fn status(sandboxes: Vec<SandboxStatus>, mut containers: Vec<ContainerStatus>) -> PodStatus {
    containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    PodStatus {
        sandboxes,
        containers,
        ..Default::default()
    }
}

#[test]
fn a_new_pod_gets_a_sandbox_and_its_first_init_container() {
    let p = pod("Always", &["i1", "i2"], &["app"]);
    let a = compute_pod_actions(&p, &PodStatus::default(), &Verdicts::default());
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.attempt, a.init_to_start.clone()), (0, vec![0]));
    assert!(a.containers_to_start.is_empty());
    let plain = pod("Always", &[], &["a", "b"]);
    assert_eq!(
        compute_pod_actions(&plain, &PodStatus::default(), &Verdicts::default())
            .containers_to_start,
        [0, 1]
    );
}

#[test]
fn init_containers_run_one_at_a_time_in_order() {
    let p = pod("Always", &["i1", "i2"], &["app"]);
    let running = status(vec![sandbox(0, true)], vec![c(&p, "i1", 1, None)]);
    assert!(
        compute_pod_actions(&p, &running, &Verdicts::default()).is_noop(),
        "wait for i1"
    );
    let i1_done = status(vec![sandbox(0, true)], vec![c(&p, "i1", 1, Some(0))]);
    assert_eq!(
        compute_pod_actions(&p, &i1_done, &Verdicts::default()).init_to_start,
        [1]
    );
    let both_done = status(
        vec![sandbox(0, true)],
        vec![c(&p, "i1", 1, Some(0)), c(&p, "i2", 2, Some(0))],
    );
    let a = compute_pod_actions(&p, &both_done, &Verdicts::default());
    assert_eq!(
        (a.init_to_start.clone(), a.containers_to_start.clone()),
        (vec![], vec![0])
    );
}

#[test]
fn a_failed_init_container_is_retried_unless_the_policy_is_never() {
    let p = pod("Always", &["i1"], &["app"]);
    let failed = status(vec![sandbox(0, true)], vec![c(&p, "i1", 1, Some(1))]);
    assert_eq!(
        compute_pod_actions(&p, &failed, &Verdicts::default()).init_to_start,
        [0]
    );
    let never = pod("Never", &["i1"], &["app"]);
    let failed = status(vec![sandbox(0, true)], vec![c(&never, "i1", 1, Some(1))]);
    let a = compute_pod_actions(&never, &failed, &Verdicts::default());
    assert!(a.kill_pod && a.init_to_start.is_empty());
}

#[test]
fn completed_init_containers_are_not_rerun_once_an_app_container_runs() {
    let p = pod("Always", &["i1"], &["app"]);
    // After an agent restart the init container's record may be gone: the app runs.
    let s = status(vec![sandbox(0, true)], vec![c(&p, "app", 2, None)]);
    assert!(compute_pod_actions(&p, &s, &Verdicts::default()).is_noop());
}

#[test]
fn restart_policies_decide_which_exited_containers_start_again() {
    for (policy, code, restart) in [
        ("Always", 0, true),
        ("Always", 1, true),
        ("OnFailure", 0, false),
        ("OnFailure", 1, true),
        ("Never", 0, false),
        ("Never", 1, false),
    ] {
        let p = pod(policy, &[], &["a", "b"]);
        let s = status(
            vec![sandbox(0, true)],
            vec![c(&p, "a", 1, Some(code)), c(&p, "b", 1, None)],
        );
        let a = compute_pod_actions(&p, &s, &Verdicts::default());
        assert_eq!(
            a.containers_to_start == [0],
            restart,
            "{policy} exit {code}: {a:?}"
        );
        assert!(!a.kill_pod, "{policy}: b still runs");
    }
}

#[test]
fn a_pod_with_nothing_left_to_run_is_killed() {
    let p = pod("Never", &[], &["a"]);
    let s = status(vec![sandbox(0, true)], vec![c(&p, "a", 1, Some(0))]);
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(a.kill_pod && !a.create_sandbox && a.containers_to_start.is_empty());
    // Its sandbox is then gone: no new one for a pod that must not restart.
    let s = status(vec![sandbox(0, false)], vec![c(&p, "a", 1, Some(0))]);
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(a.kill_pod && !a.create_sandbox);
}

#[test]
fn a_dead_sandbox_is_replaced_with_the_next_attempt() {
    let p = pod("Always", &[], &["a"]);
    let s = status(vec![sandbox(0, false)], vec![c(&p, "a", 1, Some(137))]);
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.attempt, a.containers_to_start.clone()), (1, vec![0]));
}

#[test]
fn a_changed_container_spec_replaces_the_container() {
    let p = pod("Always", &[], &["a", "b"]);
    let mut s = status(
        vec![sandbox(0, true)],
        vec![c(&p, "a", 1, None), c(&p, "b", 1, None)],
    );
    s.containers
        .iter_mut()
        .find(|x| x.name == "b")
        .unwrap()
        .annotations
        .insert(CONTAINER_HASH.into(), "old".into());
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert_eq!(a.containers_to_start, [1]);
    assert_eq!(a.containers_to_kill.len(), 1);
    assert_eq!(a.containers_to_kill[0].name, "b");
    assert!(!a.kill_pod);
}

#[test]
fn an_unchanged_running_pod_needs_nothing() {
    let p = pod("Always", &["i1"], &["a"]);
    let s = status(
        vec![sandbox(0, true)],
        vec![c(&p, "i1", 1, Some(0)), c(&p, "a", 2, None)],
    );
    assert!(compute_pod_actions(&p, &s, &Verdicts::default()).is_noop());
}

#[test]
fn the_hash_follows_the_spec() {
    let a = container("a");
    let mut b = container("a");
    assert_eq!(container_hash(&a), container_hash(&b));
    b.args = Some(vec!["x".into()]);
    assert_ne!(container_hash(&a), container_hash(&b));
    assert_eq!(container_hash(&a).len(), 16);
}

#[test]
fn an_on_failure_pod_whose_sandbox_died_gets_a_new_one_for_what_failed() {
    // A node reboot: the sandbox is gone, one container had failed, one had succeeded.
    let p = pod("OnFailure", &[], &["failed", "done"]);
    let s = status(
        vec![sandbox(0, false)],
        vec![c(&p, "failed", 1, Some(1)), c(&p, "done", 1, Some(0))],
    );
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.attempt, a.containers_to_start.clone()), (1, vec![0]));
    // Everything succeeded: nothing to start, so no sandbox either.
    let s = status(
        vec![sandbox(0, false)],
        vec![c(&p, "failed", 1, Some(0)), c(&p, "done", 1, Some(0))],
    );
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(!a.create_sandbox && a.kill_pod && a.containers_to_start.is_empty());
}

#[test]
fn a_container_in_an_unknown_state_is_killed_before_it_is_started_again() {
    let p = pod("Always", &[], &["a"]);
    let mut s = status(vec![sandbox(0, true)], vec![c(&p, "a", 1, Some(1))]);
    s.containers[0].state = ContainerState::Unknown;
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert_eq!(a.containers_to_start, [0]);
    assert_eq!(a.containers_to_kill.len(), 1, "{a:?}");
    assert_eq!(a.containers_to_kill[0].id, "a-1");
}

#[test]
fn a_plan_becomes_steps_in_the_order_a_sync_takes_them() {
    let fresh = pod("Always", &["i1"], &["app"]);
    assert_eq!(
        compute_pod_actions(&fresh, &PodStatus::default(), &Verdicts::default()).steps(),
        [
            Step::KillPod { replacing: true },
            Step::CreateSandbox { attempt: 0 },
            Step::StartInit(0)
        ]
    );
    let plain = pod("Always", &[], &["a", "b"]);
    assert_eq!(
        compute_pod_actions(&plain, &PodStatus::default(), &Verdicts::default()).steps(),
        [
            Step::KillPod { replacing: true },
            Step::CreateSandbox { attempt: 0 },
            Step::StartContainer(0),
            Step::StartContainer(1)
        ]
    );
    // A kept sandbox: the changed container is stopped, then started again.
    let kill = ContainerKill {
        id: "b-1".into(),
        name: "b".into(),
        reason: KillReason::Changed,
        message: "Container b definition changed, will be restarted".into(),
        grace: None,
    };
    let kept = PodActions {
        sandbox_id: Some("s".into()),
        containers_to_start: vec![1],
        containers_to_kill: vec![kill.clone()],
        ..Default::default()
    };
    assert_eq!(
        kept.steps(),
        [Step::KillContainers(vec![kill]), Step::StartContainer(1)]
    );
    // Nothing may run: only the kill.
    let done = PodActions {
        kill_pod: true,
        ..Default::default()
    };
    assert_eq!(done.steps(), [Step::KillPod { replacing: false }]);
    assert!(PodActions::default().steps().is_empty());
}

fn with(p: &mut Pod, name: &str, edit: impl FnOnce(&mut Container)) {
    let spec = p.spec.as_mut().unwrap();
    let c = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
        .find(|c| c.name == name)
        .unwrap();
    edit(c);
}

fn sidecar(c: &mut Container) {
    c.restart_policy = Some("Always".into());
}

fn startup_probe(c: &mut Container) {
    c.startup_probe =
        Some(serde_json::from_value(serde_json::json!({"exec": {"command": ["true"]}})).unwrap());
}

fn failed(id: &str, container: &str, kind: ProbeKind, grace: Option<i64>) -> Verdicts {
    let mut v = Verdicts::default();
    v.failed.insert(
        id.into(),
        podvisor_probe::Failed {
            container: container.into(),
            kind,
            grace_seconds: grace,
        },
    );
    v
}

#[test]
fn a_sidecar_starts_first_the_next_init_container_once_it_started_then_it_keeps_running() {
    let mut p = pod("Never", &["proxy", "setup"], &["app"]);
    with(&mut p, "proxy", sidecar);
    let none = Verdicts::default();
    let sb = || vec![sandbox(0, true)];
    let a = compute_pod_actions(&p, &status(sb(), vec![]), &none);
    assert_eq!(a.init_to_start, [0]);
    let proxy_up = status(sb(), vec![c(&p, "proxy", 1, None)]);
    assert_eq!(compute_pod_actions(&p, &proxy_up, &none).init_to_start, [1]);
    let setup_runs = status(sb(), vec![c(&p, "proxy", 1, None), c(&p, "setup", 2, None)]);
    assert!(compute_pod_actions(&p, &setup_runs, &none).is_noop());
    let setup_done = status(
        sb(),
        vec![c(&p, "proxy", 1, None), c(&p, "setup", 2, Some(0))],
    );
    let a = compute_pod_actions(&p, &setup_done, &none);
    assert_eq!(
        (a.init_to_start.clone(), a.containers_to_start.clone()),
        (vec![], vec![0])
    );
    // A sidecar is restarted whatever the pod's policy, beside the running app.
    let proxy_died = status(
        sb(),
        vec![
            c(&p, "proxy", 1, Some(1)),
            c(&p, "setup", 2, Some(0)),
            c(&p, "app", 3, None),
        ],
    );
    let a = compute_pod_actions(&p, &proxy_died, &none);
    assert_eq!((a.init_to_start.clone(), a.kill_pod), (vec![0], false));
    // The app finished and will not restart: the running sidecar does not keep the pod.
    let app_done = status(
        sb(),
        vec![
            c(&p, "proxy", 1, None),
            c(&p, "setup", 2, Some(0)),
            c(&p, "app", 3, Some(0)),
        ],
    );
    let a = compute_pod_actions(&p, &app_done, &none);
    assert!(a.kill_pod && a.init_to_start.is_empty() && a.containers_to_start.is_empty());
}

#[test]
fn a_sidecars_startup_probe_gates_the_next_init_container_and_its_failure_restarts_it() {
    let mut p = pod("Always", &["proxy", "setup"], &["app"]);
    with(&mut p, "proxy", sidecar);
    with(&mut p, "proxy", startup_probe);
    let s = status(vec![sandbox(0, true)], vec![c(&p, "proxy", 1, None)]);
    assert!(
        compute_pod_actions(&p, &s, &Verdicts::default()).is_noop(),
        "not started yet"
    );
    let mut started = Verdicts::default();
    started.started.insert("proxy-1".into());
    assert_eq!(compute_pod_actions(&p, &s, &started).init_to_start, [1]);
    let a = compute_pod_actions(
        &p,
        &s,
        &failed("proxy-1", "proxy", ProbeKind::Startup, Some(4)),
    );
    assert_eq!(a.init_to_start, [0]);
    assert_eq!(a.containers_to_kill.len(), 1);
    let k = &a.containers_to_kill[0];
    assert_eq!(k.message, "Init container proxy failed startup probe");
    assert_eq!(
        (k.reason, k.grace),
        (KillReason::StartupProbe, Some(GracePeriod::from_seconds(4)))
    );
}

#[test]
fn a_failed_liveness_probe_restarts_the_container_as_its_policy_says() {
    let p = pod("Always", &[], &["app", "web"]);
    let s = status(
        vec![sandbox(0, true)],
        vec![c(&p, "app", 1, None), c(&p, "web", 1, None)],
    );
    let a = compute_pod_actions(
        &p,
        &s,
        &failed("app-1", "app", ProbeKind::Liveness, Some(3)),
    );
    assert_eq!(a.containers_to_start, [0]);
    let k = &a.containers_to_kill[0];
    assert_eq!(
        k.message,
        "Container app failed liveness probe, will be restarted"
    );
    assert_eq!(k.grace, Some(GracePeriod::from_seconds(3)));
    // A container that never restarts is stopped; with nothing else running, the pod is.
    let mut never = pod("Always", &[], &["app", "web"]);
    with(&mut never, "app", |c| {
        c.restart_policy = Some("Never".into())
    });
    let s = status(
        vec![sandbox(0, true)],
        vec![c(&never, "app", 1, None), c(&never, "web", 1, None)],
    );
    let a = compute_pod_actions(
        &never,
        &s,
        &failed("app-1", "app", ProbeKind::Liveness, None),
    );
    assert_eq!(
        a.containers_to_kill[0].message,
        "Container app failed liveness probe"
    );
    assert!(
        a.containers_to_start.is_empty() && !a.kill_pod,
        "web keeps the pod"
    );
    let alone = pod("Never", &[], &["app"]);
    let s = status(vec![sandbox(0, true)], vec![c(&alone, "app", 1, None)]);
    let a = compute_pod_actions(
        &alone,
        &s,
        &failed("app-1", "app", ProbeKind::Liveness, None),
    );
    assert!(a.kill_pod, "{a:?}");
}

#[test]
fn restart_rules_restart_on_the_listed_exit_codes_only() {
    let mut p = pod("Never", &[], &["app", "web"]);
    with(&mut p, "app", |c| {
        *c = serde_json::from_value(serde_json::json!({"name": "app", "image": "busybox",
            "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}))
        .unwrap();
    });
    for (code, restart) in [(42, true), (1, false), (0, false)] {
        let s = status(
            vec![sandbox(0, true)],
            vec![c(&p, "app", 1, Some(code)), c(&p, "web", 1, None)],
        );
        let a = compute_pod_actions(&p, &s, &Verdicts::default());
        assert_eq!(a.containers_to_start == [0], restart, "exit {code}: {a:?}");
    }
}

#[test]
fn an_ephemeral_container_starts_once_even_before_the_pod_is_initialized() {
    use k8s_openapi::api::core::v1::EphemeralContainer;
    let mut p = pod("Always", &["init"], &["app"]);
    p.spec.as_mut().unwrap().ephemeral_containers = Some(vec![EphemeralContainer {
        name: "dbg".into(),
        image: Some("i".into()),
        ..Default::default()
    }]);
    // Still initializing: the debugger starts anyway, before the init container.
    let s = status(vec![sandbox(0, true)], vec![]);
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert_eq!(a.ephemeral_to_start, [0]);
    assert_eq!(a.steps(), [Step::StartEphemeral(0), Step::StartInit(0)]);
    // Seen by the runtime once, running or exited: never started again.
    let exited = status(
        vec![sandbox(0, true)],
        vec![
            c(&p, "init", 1, Some(0)),
            c(&p, "app", 2, None),
            c(&p, "dbg", 3, Some(1)),
        ],
    );
    let a = compute_pod_actions(&p, &exited, &Verdicts::default());
    assert!(a.ephemeral_to_start.is_empty());
    assert!(a.is_noop(), "{a:?}");
    // A sandbox made anew starts none: debuggers belong to the sandbox they were added to.
    let fresh = compute_pod_actions(&p, &PodStatus::default(), &Verdicts::default());
    assert!(fresh.ephemeral_to_start.is_empty());
}

fn sized(p: &mut Pod, cpu: &str, memory: &str, memory_policy: &str) {
    use k8s_openapi::api::core::v1::{ContainerResizePolicy, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let q = |cpu: &str, mem: &str| {
        Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(mem.into())),
        ]))
    };
    let app = &mut p.spec.as_mut().unwrap().containers[0];
    app.resources = Some(ResourceRequirements {
        requests: q("100m", "64Mi"),
        limits: q(cpu, memory),
        ..Default::default()
    });
    let policy = |r: &str, p: &str| ContainerResizePolicy {
        resource_name: r.into(),
        restart_policy: p.into(),
    };
    app.resize_policy = Some(vec![
        policy("cpu", "NotRequired"),
        policy("memory", memory_policy),
    ]);
}

/// The resources the runtime applies for the pod's app container as it is now.
fn applied(p: &Pod) -> podvisor_cri::ContainerResources {
    let r = crate::kuberuntime::config::resources(&p.containers()[0], 0).unwrap();
    podvisor_cri::ContainerResources {
        cpu_shares: r.cpu_shares,
        cpu_quota: r.cpu_quota,
        cpu_period: r.cpu_period,
        memory_limit: r.memory_limit_in_bytes,
    }
}

#[test]
fn a_resize_updates_in_place_or_restarts_as_the_policy_says_and_never_replaces() {
    let mut p = pod("Always", &[], &["app"]);
    sized(&mut p, "200m", "128Mi", "RestartContainer");
    let mut running = c(&p, "app", 1, None);
    running.resources = Some(applied(&p));
    let s = status(vec![sandbox(0, true)], vec![running.clone()]);
    assert!(compute_pod_actions(&p, &s, &Verdicts::default()).is_noop());

    // CPU: NotRequired. The hash leaves resources out: no "definition changed".
    sized(&mut p, "400m", "128Mi", "RestartContainer");
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert!(a.containers_to_kill.is_empty() && a.containers_to_start.is_empty());
    let want = ContainerResize {
        index: 0,
        init: false,
        id: running.id.clone(),
        name: "app".into(),
    };
    assert_eq!(a.containers_to_resize, [want]);
    assert!(matches!(a.steps()[0], Step::Resize(_)));

    // Memory: RestartContainer.
    sized(&mut p, "200m", "256Mi", "RestartContainer");
    let a = compute_pod_actions(&p, &s, &Verdicts::default());
    assert_eq!(a.containers_to_kill.len(), 1);
    assert_eq!(a.containers_to_kill[0].reason, KillReason::Resize);
    assert_eq!(a.containers_to_start, [0]);
    assert!(a.containers_to_resize.is_empty());
    let steps = a.steps();
    assert!(matches!(steps[0], Step::KillContainers(_)));
    assert_eq!(
        steps[1],
        Step::Resize(vec![]),
        "the pod cgroup fits the new limits first"
    );

    // A runtime that reports no resources is never resized in place.
    running.resources = None;
    let s = status(vec![sandbox(0, true)], vec![running]);
    assert!(compute_pod_actions(&p, &s, &Verdicts::default()).is_noop());
}

#[test]
fn a_container_made_when_the_hash_covered_resources_is_not_replaced() {
    let mut p = pod("Always", &[], &["app"]);
    sized(&mut p, "200m", "128Mi", "NotRequired");
    let mut running = c(&p, "app", 1, None);
    running
        .annotations
        .insert(CONTAINER_HASH.into(), hash_of(&p.containers()[0]));
    assert!(!changed(&p.containers()[0], &running));
    p.spec.as_mut().unwrap().containers[0].image = Some("other".into());
    assert!(changed(&p.containers()[0], &running));
}

#[test]
fn a_memory_request_alone_restarts_only_a_container_whose_policy_says_so() {
    use crate::kuberuntime::config::{MEMORY_REQUEST, memory_request};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    for (policy, restarts) in [("RestartContainer", true), ("NotRequired", false)] {
        let mut p = pod("Always", &[], &["app"]);
        sized(&mut p, "200m", "128Mi", policy);
        let mut running = c(&p, "app", 1, None);
        running.resources = Some(applied(&p));
        let made = memory_request(&p.containers()[0]).unwrap();
        running.annotations.insert(MEMORY_REQUEST.into(), made);
        let app = &mut p.spec.as_mut().unwrap().containers[0];
        let requests = app.resources.as_mut().unwrap().requests.as_mut().unwrap();
        requests.insert("memory".into(), Quantity("96Mi".into()));
        let s = status(vec![sandbox(0, true)], vec![running]);
        let a = compute_pod_actions(&p, &s, &Verdicts::default());
        assert_eq!(a.containers_to_kill.len() == 1, restarts, "{policy}");
        assert!(
            a.containers_to_resize.is_empty(),
            "{policy}: nothing to apply in place"
        );
    }
}
