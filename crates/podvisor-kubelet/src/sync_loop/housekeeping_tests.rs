use std::collections::BTreeMap;

use podvisor_cri::{PodRef, Sandbox, SandboxState};

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::sync_loop::Allocatable;

fn pod(uid: &str) -> SharedPod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.into());
    p.metadata.name = Some(uid.into());
    SharedPod::new(p).unwrap()
}

fn runtime_pod(uid: &str, node: &str) -> podvisor_cri::Pod {
    let pod = PodRef {
        uid: uid.into(),
        name: uid.into(),
        namespace: "default".into(),
    };
    podvisor_cri::Pod {
        pod: pod.clone(),
        sandboxes: vec![Sandbox {
            id: format!("sb-{uid}"),
            pod,
            attempt: 0,
            state: SandboxState::Ready,
            created_at: 0,
            managed_by: Some(node.to_string()),
        }],
        containers: vec![],
    }
}

fn manager(desired: &[&str]) -> PodManager {
    let mut m = PodManager::new(["file"]);
    let room = Allocatable {
        pods: 100,
        cpu_milli: 1000,
        memory_bytes: 1 << 30,
    };
    let pods: Vec<SharedPod> = desired.iter().map(|u| pod(u)).collect();
    m.set_source("file", pods.clone());
    for p in &pods {
        m.admit(p, &room).unwrap();
    }
    m
}

fn kinds(plan: &Plan) -> Vec<(String, UpdateType, bool)> {
    plan.updates
        .iter()
        .map(|u| {
            let uid = u.uid().map(ToString::to_string).unwrap_or_default();
            (uid, u.update_type.unwrap(), u.running_pod.is_some())
        })
        .collect()
}

#[test]
fn a_desired_pod_the_workers_never_got_is_created_again() {
    let mut m = manager(&["a", "b"]);
    let states = BTreeMap::from([(PodUid::from("a"), PodWorkerState::Syncing)]);
    let plan = plan(&mut m, &states, Some(vec![]), "n");
    assert_eq!(kinds(&plan), [("b".to_string(), UpdateType::Create, false)]);
}

#[test]
fn a_removed_pod_still_syncing_is_killed_and_one_the_workers_forgot_is_forgotten() {
    let mut m = manager(&["a", "b"]);
    m.set_source("file", vec![]);
    m.remove(&PodUid::from("a"));
    m.remove(&PodUid::from("b"));
    let states = BTreeMap::from([(PodUid::from("a"), PodWorkerState::Syncing)]);
    let plan = plan(&mut m, &states, Some(vec![]), "n");
    assert_eq!(kinds(&plan), [("a".to_string(), UpdateType::Kill, false)]);
    assert!(
        plan.updates[0]
            .pod
            .as_ref()
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    assert_eq!(plan.forget, ["b"]);
    assert_eq!(plan.retain, HashSet::from([PodUid::from("a")]));
    assert_eq!(
        m.removed().collect::<Vec<_>>(),
        ["a"],
        "b is no longer remembered"
    );
}

#[test]
fn only_this_node_s_unknown_runtime_pods_are_killed() {
    let mut m = manager(&["a"]);
    let states = BTreeMap::from([
        (PodUid::from("a"), PodWorkerState::Syncing),
        (PodUid::from("stopping"), PodWorkerState::Terminating),
    ]);
    let running = vec![
        runtime_pod("a", "n"),
        runtime_pod("stopping", "n"),
        runtime_pod("orphan", "n"),
        runtime_pod("theirs", "other-node"),
    ];
    let plan = plan(&mut m, &states, Some(running), "n");
    assert_eq!(
        kinds(&plan),
        [("orphan".to_string(), UpdateType::Kill, true)]
    );
    // Nothing of a pod still in the runtime is swept, whoever owns it.
    let keep = plan.keep_dirs.unwrap();
    for uid in ["a", "stopping", "orphan", "theirs"] {
        assert!(keep.contains(uid), "{uid}");
    }
    assert!(!plan.retain.contains("orphan"), "no status to keep for it");
}

#[test]
fn without_a_runtime_listing_no_directory_is_swept_and_nothing_is_killed() {
    let mut m = manager(&["a"]);
    let states = BTreeMap::from([(PodUid::from("a"), PodWorkerState::Syncing)]);
    let plan = plan(&mut m, &states, None, "n");
    assert!(plan.keep_dirs.is_none());
    assert!(plan.updates.is_empty());
}

#[test]
fn terminated_pods_free_admission_and_recreated_ones_start_again() {
    let mut m = manager(&["job", "again"]);
    let states = BTreeMap::from([
        (PodUid::from("job"), PodWorkerState::Terminated),
        (
            PodUid::from("again"),
            PodWorkerState::TerminatedAndRecreated,
        ),
    ]);
    let plan = plan(&mut m, &states, Some(vec![]), "n");
    assert_eq!(
        kinds(&plan),
        [("again".to_string(), UpdateType::Create, false)]
    );
    let one = Allocatable {
        pods: 2,
        cpu_milli: 1000,
        memory_bytes: 1 << 30,
    };
    m.admit(&pod("new"), &one)
        .expect("the finished job does not count");
}
