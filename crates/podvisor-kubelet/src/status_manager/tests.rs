//! The status manager's records, without an actix System.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_core::SharedPod;
use serde_json::json;

use super::StatusManager;

fn pod(labels: serde_json::Value, status_phase: &str) -> SharedPod {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": status_phase}}))
    .unwrap();
    SharedPod::new(p).unwrap()
}

fn running() -> ApiPodStatus {
    ApiPodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    }
}

#[test]
fn a_record_holds_the_pod_it_was_given_and_its_status_beside_it() {
    let mut m = StatusManager::new();
    let given = pod(json!({"app": "a"}), "Pending");
    assert!(m.set(&given, running()), "a first status is a change");
    let record = &m.records[given.uid()];
    assert!(Arc::ptr_eq(&record.pod, given.arc()), "no copy of the pod");
    assert_eq!(
        record.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );
    assert_eq!(
        record.pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );

    assert!(
        !m.set(&given, running()),
        "the same status again is no change"
    );
    // The API's copy after the node's write: only its own status differs. No change to
    // publish, but the record lets go of the older copy.
    let newer = pod(json!({"app": "a"}), "Running");
    assert!(!m.set(&newer, running()));
    assert!(Arc::ptr_eq(&m.records[given.uid()].pod, newer.arc()));
    // A pod that changed otherwise is published again, though its status is the same.
    let relabelled = pod(json!({"app": "b"}), "Running");
    assert!(m.set(&relabelled, running()));
}
