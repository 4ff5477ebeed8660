//! Copies of a cluster's objects (`Store::replicate`): kept as the cluster has them, the
//! node's status and deletions kept over them, and nothing written for nothing new.

use k8s_openapi::api::core::v1::Pod;
use podvisor_client::{AnyObject, PostParams, Subresource};
use podvisor_core::Kind;
use podvisor_store::{ChangeType, Resource, Store, StoreConfig};
use serde_json::json;

fn open(name: &str) -> (Store, std::path::PathBuf) {
    let d = std::env::temp_dir()
        .join("podvisor-store-replica")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let store = Store::open(&StoreConfig {
        path: d.join("store.redb"),
        window: 100,
    })
    .unwrap();
    (store, d)
}

/// The cluster's pod `web` in namespace `team` (which the store does not have).
fn cluster_pod(uid: &str, image: &str, phase: &str) -> AnyObject {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "team", "uid": uid,
                     "resourceVersion": "9187", "creationTimestamp": "2026-11-26T10:00:00Z",
                     "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": image}]},
        "status": {"phase": phase}
    }))
    .unwrap();
    AnyObject::new(pod)
}

fn pod(s: &Store) -> std::sync::Arc<Pod> {
    s.get(Kind::Pod, "team", "web").unwrap().typed().unwrap()
}

fn res() -> Resource {
    Resource::of(Kind::Pod)
}

#[test]
fn a_copy_keeps_the_cluster_s_identity_and_makes_its_namespace() {
    let (mut s, d) = open("identity");
    let changes = s
        .replicate(&res(), cluster_pod("u1", "busybox", "Pending"))
        .unwrap();
    assert_eq!(changes.len(), 2, "the namespace, then the pod");
    assert_eq!(changes[0].object.kind, Kind::Namespace);
    let p = pod(&s);
    assert_eq!(p.metadata.uid.as_deref(), Some("u1"));
    assert_eq!(
        p.metadata
            .creation_timestamp
            .as_ref()
            .unwrap()
            .0
            .to_string(),
        "2026-11-26T10:00:00Z"
    );
    assert_ne!(
        p.metadata.resource_version.as_deref(),
        Some("9187"),
        "the store's own version"
    );
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn the_node_s_status_wins_and_the_same_copy_writes_nothing() {
    let (mut s, d) = open("status");
    s.replicate(&res(), cluster_pod("u1", "busybox", "Pending"))
        .unwrap();
    let mut ours = (*pod(&s)).clone();
    ours.status.as_mut().unwrap().phase = Some("Running".into());
    s.update(
        &res(),
        AnyObject::new(ours),
        Subresource::Status,
        PostParams::default(),
    )
    .unwrap();
    // The cluster still says Pending (the node has not written it there yet).
    let again = s
        .replicate(&res(), cluster_pod("u1", "busybox", "Pending"))
        .unwrap();
    assert!(again.is_empty(), "nothing new: {again:?}");
    // A spec change is taken, the node's status kept.
    let changed = s
        .replicate(&res(), cluster_pod("u1", "nginx", "Pending"))
        .unwrap();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].kind, ChangeType::Modified);
    let p = pod(&s);
    assert_eq!(
        p.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("nginx")
    );
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn conditions_others_set_in_the_cluster_are_taken_the_node_s_kept() {
    let (mut s, d) = open("conditions");
    s.replicate(&res(), cluster_pod("u1", "busybox", "Pending"))
        .unwrap();
    let mut ours = (*pod(&s)).clone();
    ours.status = Some(
        serde_json::from_value(json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady"},
            {"type": "DisruptionTarget", "status": "True"}]}))
        .unwrap(),
    );
    s.update(
        &res(),
        AnyObject::new(ours),
        Subresource::Status,
        PostParams::default(),
    )
    .unwrap();
    // A load balancer sets the pod's readiness gate in the cluster.
    let mut gated = cluster_pod("u1", "busybox", "Pending");
    if let AnyObject::Pod(p) = &mut gated {
        std::sync::Arc::make_mut(p).status = Some(
            serde_json::from_value(json!({"phase": "Pending", "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "example.com/lb", "status": "True"}]}))
            .unwrap(),
        );
    }
    assert_eq!(s.replicate(&res(), gated).unwrap().len(), 1);
    let status = pod(&s).status.clone().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"), "the node's phase");
    let conditions: Vec<_> = status
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    assert_eq!(
        conditions,
        [
            ("Ready".to_string(), "False".to_string()),
            ("DisruptionTarget".to_string(), "True".to_string()),
            ("example.com/lb".to_string(), "True".to_string())
        ],
        "the node's Ready, its DisruptionTarget not yet written up, the cluster's gate"
    );
    let _ = std::fs::remove_dir_all(d);
}

/// kube-apiserver removes a pod in two writes: deletionTimestamp with a grace of 0, then
/// the removal. A copy of the first (taken after the node had removed its own copy) must
/// go when the second is forgotten: a delete with grace 0 removes a pod already marked
/// with 0, as kube-apiserver's `BeforeDelete` does. It stayed for ever, Terminating.
#[test]
fn a_copy_marked_with_no_grace_left_goes_when_forgotten() {
    let (mut s, d) = open("no-grace");
    let mut marked = cluster_pod("u1", "busybox", "Failed");
    if let AnyObject::Pod(p) = &mut marked {
        let m = &mut std::sync::Arc::make_mut(p).metadata;
        m.deletion_timestamp = Some(podvisor_core::time::now());
        m.deletion_grace_period_seconds = Some(0);
    }
    s.replicate(&res(), marked).unwrap();
    let now = podvisor_client::DeleteParams {
        grace_seconds: Some(0),
        ..Default::default()
    };
    let (kept, changes) = s.delete(&res(), "team", "web", &now).unwrap();
    assert!(kept.is_none(), "removed");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].kind, ChangeType::Deleted);
    assert!(s.get(Kind::Pod, "team", "web").is_err());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_deletion_the_node_started_is_not_taken_back() {
    let (mut s, d) = open("deletion");
    s.replicate(&res(), cluster_pod("u1", "busybox", "Pending"))
        .unwrap();
    let grace = podvisor_client::DeleteParams {
        grace_seconds: Some(30),
        ..Default::default()
    };
    s.delete(&res(), "team", "web", &grace).unwrap();
    assert!(pod(&s).metadata.deletion_timestamp.is_some());
    s.replicate(&res(), cluster_pod("u1", "nginx", "Pending"))
        .unwrap();
    let p = pod(&s);
    assert!(
        p.metadata.deletion_timestamp.is_some(),
        "still being deleted"
    );
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn another_incarnation_replaces_the_old_one() {
    let (mut s, d) = open("incarnation");
    s.replicate(&res(), cluster_pod("u1", "busybox", "Running"))
        .unwrap();
    let changes = s
        .replicate(&res(), cluster_pod("u2", "busybox", "Pending"))
        .unwrap();
    let kinds: Vec<_> = changes.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [ChangeType::Deleted, ChangeType::Added]);
    assert_eq!(pod(&s).metadata.uid.as_deref(), Some("u2"));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_copy_without_the_cluster_s_uid_is_refused() {
    let (mut s, d) = open("no-uid");
    let mut o = cluster_pod("", "busybox", "Pending");
    o.meta_mut().uid = None;
    assert!(s.replicate(&res(), o).is_err());
    let _ = std::fs::remove_dir_all(d);
}
