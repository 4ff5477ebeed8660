use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use podvisor_cri::{PodRef, SandboxState, SandboxStatus};

use super::probes::ProbeView;
use super::*;

fn pod(policy: &str, inits: &[&str], apps: &[&str]) -> Pod {
    let c = |n: &&str| Container {
        name: n.to_string(),
        image: Some("busybox".into()),
        ..Default::default()
    };
    Pod {
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: Some(inits.iter().map(c).collect()),
            containers: apps.iter().map(c).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cs(name: &str, attempt: u32, created: i64, exit: Option<i32>) -> ContainerStatus {
    ContainerStatus {
        id: format!("{name}-{attempt}"),
        sandbox_id: String::new(),
        name: name.into(),
        attempt,
        state: if exit.is_some() {
            ContainerState::Exited
        } else {
            ContainerState::Running
        },
        created_at: created,
        started_at: created * 1_000_000_000,
        finished_at: if exit.is_some() {
            created * 1_000_000_000 + 1
        } else {
            0
        },
        exit_code: exit.unwrap_or(0),
        image: "busybox".into(),
        image_ref: "sha256:abc".into(),
        reason: String::new(),
        message: String::new(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        log_path: String::new(),
        user: None,
        resources: None,
    }
}

fn rt(mut containers: Vec<ContainerStatus>) -> PodStatus {
    containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    PodStatus {
        pod: PodRef::default(),
        ips: vec!["10.88.0.9".into()],
        sandboxes: vec![SandboxStatus {
            id: "sb".into(),
            pod: PodRef::default(),
            attempt: 0,
            state: SandboxState::Ready,
            created_at: 0,
            ip: Some("10.88.0.9".into()),
            additional_ips: vec![],
            host_network: false,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        }],
        containers,
    }
}

fn get<'a>(s: &'a ApiPodStatus, name: &str) -> &'a ApiContainerStatus {
    s.container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
        .find(|c| c.name == name)
        .unwrap()
}

fn cond(s: &ApiPodStatus, kind: &str) -> String {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .unwrap()
        .status
        .clone()
}

#[test]
fn a_new_pod_is_pending_with_creating_containers() {
    let p = pod("Always", &[], &["app"]);
    let s = api_status(
        &p,
        &PodStatus::default(),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(s.phase.as_deref(), Some("Pending"));
    let w = get(&s, "app").state.clone().unwrap().waiting.unwrap();
    assert_eq!(w.reason.as_deref(), Some("ContainerCreating"));
    assert_eq!(cond(&s, "Ready"), "False");
    assert_eq!(s.pod_ip, None);
}

#[test]
fn running_containers_make_a_ready_running_pod_with_its_ip() {
    let p = pod("Always", &["init"], &["app"]);
    let s = api_status(
        &p,
        &rt(vec![cs("init", 0, 1, Some(0)), cs("app", 0, 2, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(s.phase.as_deref(), Some("Running"));
    assert_eq!(s.pod_ip.as_deref(), Some("10.88.0.9"));
    for c in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(cond(&s, c), "True", "{c}");
    }
    assert!(get(&s, "app").ready);
    assert_eq!(
        get(&s, "app").container_id.as_deref(),
        Some("containerd://app-0")
    );
    // Terminating: no longer ready.
    let s = api_status(
        &p,
        &rt(vec![cs("init", 0, 1, Some(0)), cs("app", 0, 2, None)]),
        &HashMap::new(),
        true,
        ProbeView::default(),
    );
    assert_eq!(cond(&s, "Ready"), "False");
}

#[test]
fn init_containers_keep_the_pod_pending_and_uninitialized() {
    let p = pod("Always", &["i1", "i2"], &["app"]);
    let s = api_status(
        &p,
        &rt(vec![cs("i1", 0, 1, Some(0)), cs("i2", 0, 2, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(s.phase.as_deref(), Some("Pending"));
    assert_eq!(cond(&s, "Initialized"), "False");
    let w = get(&s, "app").state.clone().unwrap().waiting.unwrap();
    assert_eq!(w.reason.as_deref(), Some("PodInitializing"));
    let never = pod("Never", &["i1"], &["app"]);
    let s = api_status(
        &never,
        &rt(vec![cs("i1", 0, 1, Some(2))]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(s.phase.as_deref(), Some("Failed"));
}

#[test]
fn phases_follow_the_restart_policy() {
    for (policy, code, phase) in [
        ("Never", 0, "Succeeded"),
        ("Never", 1, "Failed"),
        ("OnFailure", 0, "Succeeded"),
        ("OnFailure", 1, "Running"),
        ("Always", 0, "Running"),
    ] {
        let p = pod(policy, &[], &["app"]);
        let s = api_status(
            &p,
            &rt(vec![cs("app", 0, 1, Some(code))]),
            &HashMap::new(),
            false,
            ProbeView::default(),
        );
        assert_eq!(s.phase.as_deref(), Some(phase), "{policy} exit {code}");
        let t = get(&s, "app").state.clone().unwrap().terminated.unwrap();
        assert_eq!(t.exit_code, code);
        assert_eq!(
            t.reason.as_deref(),
            Some(if code == 0 { "Completed" } else { "Error" })
        );
    }
}

#[test]
fn a_crash_looping_container_waits_with_its_last_exit_and_restart_count() {
    let p = pod("Always", &[], &["app"]);
    let waits = HashMap::from([(
        "app".to_string(),
        Waiting {
            reason: WaitingReason::CrashLoopBackOff,
            message: "back-off 20s restarting failed container".into(),
            instance: None,
        },
    )]);
    let s = api_status(
        &p,
        &rt(vec![
            cs("app", 0, 1, Some(1)),
            cs("app", 1, 2, Some(1)),
            cs("app", 2, 3, Some(1)),
        ]),
        &waits,
        false,
        ProbeView::default(),
    );
    let c = get(&s, "app");
    assert_eq!(c.restart_count, 2);
    let st = c.state.clone().unwrap();
    assert_eq!(
        st.waiting.unwrap().reason.as_deref(),
        Some("CrashLoopBackOff")
    );
    assert_eq!(
        c.last_state.clone().unwrap().terminated.unwrap().exit_code,
        1
    );
    assert_eq!(
        s.phase.as_deref(),
        Some("Running"),
        "Always: it keeps being restarted"
    );
    // Running again: the previous exit is its last state.
    let s = api_status(
        &p,
        &rt(vec![cs("app", 0, 1, Some(1)), cs("app", 1, 2, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    let c = get(&s, "app");
    assert!(c.state.clone().unwrap().running.is_some());
    assert_eq!(
        c.last_state.clone().unwrap().terminated.unwrap().exit_code,
        1
    );
    assert_eq!(c.restart_count, 1);
}

#[test]
fn image_errors_show_as_waiting_reasons() {
    let p = pod("Always", &[], &["app"]);
    let waits = HashMap::from([(
        "app".to_string(),
        Waiting {
            reason: WaitingReason::ErrImagePull,
            message: "registry unreachable".into(),
            instance: None,
        },
    )]);
    let s = api_status(&p, &rt(vec![]), &waits, false, ProbeView::default());
    let w = get(&s, "app").state.clone().unwrap().waiting.unwrap();
    assert_eq!(w.reason.as_deref(), Some("ErrImagePull"));
    assert_eq!(s.phase.as_deref(), Some("Pending"));
}

#[test]
fn host_network_pods_have_no_pod_ip() {
    let mut p = pod("Always", &[], &["app"]);
    p.spec.as_mut().unwrap().host_network = Some(true);
    let s = api_status(
        &p,
        &rt(vec![cs("app", 0, 1, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(s.pod_ip, None);
}

fn edit(p: &mut Pod, name: &str, f: impl FnOnce(&mut Container)) {
    let spec = p.spec.as_mut().unwrap();
    let c = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
        .find(|c| c.name == name)
        .unwrap();
    f(c);
}

fn exec_probe() -> Option<k8s_openapi::api::core::v1::Probe> {
    Some(serde_json::from_value(serde_json::json!({"exec": {"command": ["true"]}})).unwrap())
}

fn result(
    container: &str,
    id: &str,
    kind: podvisor_probe::ProbeKind,
    passed: bool,
) -> podvisor_probe::ProbeResult {
    podvisor_probe::ProbeResult {
        uid: "u".into(),
        container: container.into(),
        container_id: id.into(),
        kind,
        passed,
    }
}

#[test]
fn readiness_follows_the_probe_of_that_very_instance_and_a_published_one_stands_until_then() {
    use crate::api_status::probes::ProbeResults;
    use podvisor_probe::ProbeKind::*;
    let mut p = pod("Always", &[], &["app"]);
    edit(&mut p, "app", |c| c.readiness_probe = exec_probe());
    let r = rt(vec![cs("app", 0, 1, None)]);
    let s = api_status(&p, &r, &HashMap::new(), false, ProbeView::default());
    let app = get(&s, "app");
    assert!(
        !app.ready && app.started == Some(true),
        "a new instance is not ready yet"
    );
    assert_eq!(cond(&s, "Ready"), "False");
    let mut results = ProbeResults::default();
    results.set(&result("app", "app-0", Readiness, true));
    let ready = api_status(
        &p,
        &r,
        &HashMap::new(),
        false,
        ProbeView::new(Some(&results), None),
    );
    assert!(get(&ready, "app").ready);
    assert_eq!(cond(&ready, "Ready"), "True");
    // No verdict (a restarted agent): what was published for app-0 stands.
    let again = api_status(
        &p,
        &r,
        &HashMap::new(),
        false,
        ProbeView::new(None, Some(&ready)),
    );
    assert!(get(&again, "app").ready);
    // A new instance does not inherit it; a failing verdict takes it away.
    let next = rt(vec![cs("app", 0, 1, Some(1)), cs("app", 1, 2, None)]);
    let s = api_status(
        &p,
        &next,
        &HashMap::new(),
        false,
        ProbeView::new(None, Some(&ready)),
    );
    assert!(!get(&s, "app").ready);
    results.set(&result("app", "app-0", Readiness, false));
    let s = api_status(
        &p,
        &r,
        &HashMap::new(),
        false,
        ProbeView::new(Some(&results), Some(&ready)),
    );
    assert!(!get(&s, "app").ready);
    let c = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "ContainersReady")
        .unwrap();
    assert_eq!(c.reason.as_deref(), Some("ContainersNotReady"));
    assert_eq!(
        c.message.as_deref(),
        Some("containers with unready status: [app]")
    );
    // A startup probe: not started, so not ready, until it succeeds.
    edit(&mut p, "app", |c| {
        c.readiness_probe = None;
        c.startup_probe = exec_probe();
    });
    let s = api_status(&p, &r, &HashMap::new(), false, ProbeView::default());
    assert_eq!(
        (get(&s, "app").started, get(&s, "app").ready),
        (Some(false), false)
    );
    let mut started = ProbeResults::default();
    started.set(&result("app", "app-0", Startup, true));
    let s = api_status(
        &p,
        &r,
        &HashMap::new(),
        false,
        ProbeView::new(Some(&started), None),
    );
    assert_eq!(
        (get(&s, "app").started, get(&s, "app").ready),
        (Some(true), true)
    );
}

#[test]
fn sidecars_count_for_readiness_run_beside_the_app_and_do_not_hold_completion() {
    let mut p = pod("Never", &["proxy"], &["app"]);
    edit(&mut p, "proxy", |c| {
        c.restart_policy = Some("Always".into())
    });
    let up = rt(vec![cs("proxy", 0, 1, None), cs("app", 0, 2, None)]);
    let s = api_status(&p, &up, &HashMap::new(), false, ProbeView::default());
    assert_eq!(s.phase.as_deref(), Some("Running"));
    assert!(
        get(&s, "proxy").ready,
        "a sidecar is ready like an app container"
    );
    assert_eq!(cond(&s, "Initialized"), "True");
    // The app finished: the pod runs while the sidecar does, and succeeds once it stopped.
    let app_done = rt(vec![cs("proxy", 0, 1, None), cs("app", 0, 2, Some(0))]);
    let s = api_status(&p, &app_done, &HashMap::new(), false, ProbeView::default());
    assert_eq!(s.phase.as_deref(), Some("Running"));
    let all_done = rt(vec![cs("proxy", 0, 1, Some(143)), cs("app", 0, 2, Some(0))]);
    let s = api_status(&p, &all_done, &HashMap::new(), false, ProbeView::default());
    assert_eq!(
        s.phase.as_deref(),
        Some("Succeeded"),
        "the sidecar's exit code does not count"
    );
    // Only the sidecar runs yet: initializing, and the app waits for it.
    let first = rt(vec![cs("proxy", 0, 1, None)]);
    let s = api_status(&p, &first, &HashMap::new(), false, ProbeView::default());
    assert_eq!(cond(&s, "Initialized"), "True");
    let w = get(&s, "app").state.clone().unwrap().waiting.unwrap();
    assert_eq!(w.reason.as_deref(), Some("ContainerCreating"));
    // A regular init container that runs is neither ready nor done.
    let q = pod("Always", &["setup"], &["app"]);
    let s = api_status(
        &q,
        &rt(vec![cs("setup", 0, 1, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert!(!get(&s, "setup").ready);
    let init = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Initialized")
        .unwrap();
    assert_eq!(
        init.message.as_deref(),
        Some("containers with incomplete status: [setup]")
    );
}

#[test]
fn a_container_whose_post_start_hook_runs_is_not_running_yet_and_the_sandbox_condition_shows() {
    let p = pod("Always", &[], &["app"]);
    let mut w = Waiting::new(WaitingReason::ContainerCreating, String::new());
    w.instance = Some("app-0".into());
    let waits = HashMap::from([("app".to_string(), w)]);
    let r = rt(vec![cs("app", 0, 1, None)]);
    let s = api_status(&p, &r, &waits, false, ProbeView::default());
    let st = get(&s, "app").state.clone().unwrap();
    assert_eq!(
        st.waiting.unwrap().reason.as_deref(),
        Some("ContainerCreating")
    );
    assert_eq!(s.phase.as_deref(), Some("Pending"));
    assert_eq!(cond(&s, "PodReadyToStartContainers"), "True");
    // A wait about another instance does not hold this one.
    let mut w = Waiting::new(WaitingReason::ContainerCreating, String::new());
    w.instance = Some("app-9".into());
    let waits = HashMap::from([("app".to_string(), w)]);
    let s = api_status(&p, &r, &waits, false, ProbeView::default());
    assert!(get(&s, "app").state.clone().unwrap().running.is_some());
    let s = api_status(
        &p,
        &PodStatus::default(),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    assert_eq!(cond(&s, "PodReadyToStartContainers"), "False");
    let kinds: Vec<&str> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled"
        ]
    );
}

#[test]
fn the_node_s_address_qos_class_and_generation_are_reported() {
    let mut p = pod("Always", &[], &["app"]);
    p.metadata.generation = Some(3);
    let mut app = cs("app", 0, 1, None);
    app.user = Some(podvisor_cri::ContainerUser {
        uid: 1000,
        gid: 3000,
        supplemental_groups: vec![3000, 4000],
    });
    let running = rt(vec![app]);
    let mut s = api_status(&p, &running, &HashMap::new(), false, ProbeView::default());
    assert_eq!(s.qos_class.as_deref(), Some("BestEffort"));
    assert_eq!(s.observed_generation, Some(3));
    let conditions = s.conditions.as_ref().unwrap();
    assert!(conditions.iter().all(|c| c.observed_generation == Some(3)));
    let user = get(&s, "app")
        .user
        .as_ref()
        .and_then(|u| u.linux.as_ref())
        .unwrap();
    assert_eq!((user.uid, user.gid), (1000, 3000));
    assert_eq!(user.supplemental_groups.as_deref(), Some(&[3000, 4000][..]));
    stamp_host(&p, &mut s, Some("192.0.2.7"));
    assert_eq!(s.host_ip.as_deref(), Some("192.0.2.7"));
    assert_eq!(s.host_ips.as_ref().map(Vec::len), Some(1));
    assert_ne!(s.pod_ip.as_deref(), Some("192.0.2.7"));
    p.spec.as_mut().unwrap().host_network = Some(true);
    let mut s = api_status(&p, &running, &HashMap::new(), false, ProbeView::default());
    stamp_host(&p, &mut s, Some("192.0.2.7"));
    assert_eq!(
        s.pod_ip.as_deref(),
        Some("192.0.2.7"),
        "a host-network pod has the node's"
    );
}

#[test]
fn readiness_gates_hold_ready_until_their_conditions_are_true() {
    use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate};
    let mut p = pod("Always", &[], &["app"]);
    p.spec.as_mut().unwrap().readiness_gates = Some(vec![PodReadinessGate {
        condition_type: "example.com/lb".into(),
    }]);
    let running = rt(vec![cs("app", 0, 2, None)]);
    let status = |p: &Pod| api_status(p, &running, &HashMap::new(), false, ProbeView::default());
    let s = status(&p);
    assert_eq!(cond(&s, "ContainersReady"), "True");
    let ready = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("corresponding condition of pod readiness gate \"example.com/lb\" does not exist.")
    );
    let set = |value: &str| {
        let mut q = p.clone();
        q.status = Some(ApiPodStatus {
            conditions: Some(vec![PodCondition {
                type_: "example.com/lb".into(),
                status: value.into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        q
    };
    assert_eq!(cond(&status(&set("False")), "Ready"), "False");
    assert_eq!(cond(&status(&set("True")), "Ready"), "True");
}

#[test]
fn an_ephemeral_container_has_a_status_of_its_own_never_ready() {
    use k8s_openapi::api::core::v1::EphemeralContainer;
    let mut p = pod("Always", &[], &["app"]);
    p.spec.as_mut().unwrap().ephemeral_containers = Some(vec![EphemeralContainer {
        name: "dbg".into(),
        image: Some("busybox".into()),
        ..Default::default()
    }]);
    let s = api_status(
        &p,
        &rt(vec![cs("app", 0, 2, None), cs("dbg", 0, 3, None)]),
        &HashMap::new(),
        false,
        ProbeView::default(),
    );
    let dbg = &s.ephemeral_container_statuses.as_ref().unwrap()[0];
    assert_eq!(dbg.name, "dbg");
    assert!(dbg.state.as_ref().unwrap().running.is_some());
    assert!(!dbg.ready);
    assert_eq!(cond(&s, "Ready"), "True", "the app alone decides");
}

#[test]
fn a_terminated_pod_is_finished_whatever_its_restart_policy() {
    let p = pod("Always", &[], &["app"]);
    let status = |exit, terminated| {
        api_status(
            &p,
            &rt(vec![cs("app", 0, 2, Some(exit))]),
            &HashMap::new(),
            terminated,
            ProbeView::default(),
        )
    };
    assert_eq!(
        status(0, false).phase.as_deref(),
        Some("Running"),
        "it restarts"
    );
    assert_eq!(status(0, true).phase.as_deref(), Some("Succeeded"));
    assert_eq!(status(137, true).phase.as_deref(), Some("Failed"));
}
