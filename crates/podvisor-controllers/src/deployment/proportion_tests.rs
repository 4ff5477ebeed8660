//! Kubernetes' proportional scaling, on its documented example and on the ties that decide
//! which ReplicaSet takes the odd replica.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use serde_json::json;

use super::spread;

const NOW: i64 = 1_700_000_000;

fn deployment(replicas: i32, surge: i32, status_replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "spec": {"replicas": replicas, "selector": {}, "template": {},
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 2}}},
        "status": {"replicas": status_replicas}}))
    .unwrap()
}

/// A ReplicaSet `age` seconds old at `replicas`, last scaled for a Deployment of `max`.
fn rs(name: &str, replicas: i32, max: Option<i32>, age: i64) -> Arc<ReplicaSet> {
    let created = k8s_openapi::jiff::Timestamp::from_second(NOW - age).unwrap();
    let annotations = max.map(|m| json!({"deployment.kubernetes.io/max-replicas": m.to_string()}));
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "creationTimestamp": created.to_string(),
                "annotations": annotations},
            "spec": {"replicas": replicas, "selector": {}}}))
        .unwrap(),
    )
}

fn size(sizes: &[(String, i32)], name: &str) -> i32 {
    sizes.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn scaling_mid_rollout_splits_the_new_replicas_by_size() {
    // Kubernetes' documentation: 10 replicas with maxSurge 3, old at 8 and new at 5; the
    // Deployment goes to 15, so 18 may exist: 3 more for the old, 2 for the new.
    let d = deployment(15, 3, 13);
    let sets = [rs("old", 8, Some(13), 60), rs("new", 5, Some(13), 10)];
    let sizes = spread(&d, &sets, 18 - 13);
    assert_eq!((size(&sizes, "old"), size(&sizes, "new")), (11, 7));
}

#[test]
fn the_odd_replica_goes_to_the_newer_when_growing_and_is_taken_from_the_older_when_shrinking() {
    let sets = [rs("older", 5, Some(10), 60), rs("newer", 5, Some(10), 10)];
    let up = spread(&deployment(11, 0, 10), &sets, 1);
    assert_eq!((size(&up, "older"), size(&up, "newer")), (5, 6));
    let down = spread(&deployment(5, 0, 10), &sets, -5);
    assert_eq!((size(&down, "older"), size(&down, "newer")), (2, 3));
}

#[test]
fn shares_are_measured_against_the_size_each_was_last_scaled_for() {
    // Both at 4, the old one last scaled when the Deployment allowed 10, the new one at 20:
    // at 20 the old one doubles, the new one keeps its part and takes what is left over
    // (by current sizes alone they would both have gone to 10).
    let d = deployment(20, 0, 20);
    let sets = [rs("old", 4, Some(10), 60), rs("new", 4, Some(20), 10)];
    let sizes = spread(&d, &sets, 12);
    assert_eq!((size(&sizes, "old"), size(&sizes, "new")), (8, 12));
}

#[test]
fn without_the_annotation_the_deployments_observed_size_is_the_base() {
    let d = deployment(20, 0, 10);
    let sets = [rs("a", 6, None, 60), rs("b", 4, None, 10)];
    let sizes = spread(&d, &sets, 10);
    assert_eq!((size(&sizes, "a"), size(&sizes, "b")), (12, 8));
}

#[test]
fn nothing_goes_below_zero_and_zero_replicas_takes_everything() {
    let sets = [rs("a", 3, Some(10), 60), rs("b", 1, Some(10), 10)];
    let sizes = spread(&deployment(0, 0, 4), &sets, -4);
    assert_eq!((size(&sizes, "a"), size(&sizes, "b")), (0, 0));
    let broken = [rs("a", 3, Some(0), 60), rs("b", 1, Some(0), 10)];
    let sizes = spread(&deployment(2, 0, 0), &broken, -2);
    assert!(sizes.iter().all(|(_, n)| *n >= 0), "{sizes:?}");
    assert_eq!(sizes.iter().map(|(_, n)| n).sum::<i32>(), 2);
}
