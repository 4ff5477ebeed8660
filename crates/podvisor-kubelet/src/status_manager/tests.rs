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

/// Times are kept to the second, as the API writes them (the kubelet's `normalizeStatus`):
/// a recorded status is what the API will hold after its write, so the writer's base can
/// be the record itself, and a status recomputed within the same second is no change.
#[test]
fn times_are_recorded_to_the_second_as_the_api_keeps_them() {
    let mut m = StatusManager::new();
    let given = pod(json!({}), "Pending");
    let with_nanos: ApiPodStatus = serde_json::from_value(json!({"phase": "Running",
        "startTime": "2026-11-29T10:00:00.123456789Z",
        "conditions": [{"type": "Ready", "status": "True",
            "lastProbeTime": "2026-11-29T10:00:01.5Z",
            "lastTransitionTime": "2026-11-29T10:00:02.999Z"}],
        "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": true,
            "restartCount": 1,
            "state": {"running": {"startedAt": "2026-11-29T10:00:03.25Z"}},
            "lastState": {"terminated": {"exitCode": 1,
                "startedAt": "2026-11-29T09:59:00.75Z",
                "finishedAt": "2026-11-29T09:59:30.001Z"}}}],
        "initContainerStatuses": [{"name": "i", "image": "busybox", "imageID": "",
            "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0,
                "startedAt": "2026-11-29T09:58:00.5Z",
                "finishedAt": "2026-11-29T09:58:01.5Z"}}}]}))
    .unwrap();
    m.set(&given, with_nanos);
    let recorded = m.records[given.uid()].status.clone().unwrap();
    let through_the_api: ApiPodStatus =
        serde_json::from_value(serde_json::to_value(&*recorded).unwrap()).unwrap();
    assert_eq!(*recorded, through_the_api);
    // The start time and the transition time are the clock's, now (a first status).
    let started = recorded.start_time.as_ref().unwrap();
    assert_eq!(started.0.subsec_nanosecond(), 0);
    let c = &recorded.container_statuses.as_ref().unwrap()[0];
    let finished = c.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        finished.finished_at.as_ref().unwrap().0.as_second(),
        1_795_946_370
    );
}
