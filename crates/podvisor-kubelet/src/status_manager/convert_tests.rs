use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use podvisor_cri::{PodRef, SandboxState, SandboxStatus};

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
    let s = api_status(&p, &PodStatus::default(), &HashMap::new(), false);
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
        },
    )]);
    let s = api_status(&p, &rt(vec![]), &waits, false);
    let w = get(&s, "app").state.clone().unwrap().waiting.unwrap();
    assert_eq!(w.reason.as_deref(), Some("ErrImagePull"));
    assert_eq!(s.phase.as_deref(), Some("Pending"));
}

#[test]
fn host_network_pods_have_no_pod_ip() {
    let mut p = pod("Always", &[], &["app"]);
    p.spec.as_mut().unwrap().host_network = Some(true);
    let s = api_status(&p, &rt(vec![cs("app", 0, 1, None)]), &HashMap::new(), false);
    assert_eq!(s.pod_ip, None);
}
