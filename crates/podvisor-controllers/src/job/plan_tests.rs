use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::*;
use crate::job::from_template;

const NOW: i64 = 1_700_000_000_000;

fn job(spec: Value, status: Value) -> Job {
    let mut s = json!({"parallelism": 2, "completions": 3, "backoffLimit": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}}});
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    serde_json::from_value(
        json!({"metadata": {"name": "pi", "namespace": "ns", "uid": "job-uid"},
        "spec": s, "status": status}),
    )
    .unwrap()
}

fn iso(ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(ms)
        .unwrap()
        .to_string()
}

/// A pod of the Job: `phase`, tracked or not, a container that exited `code` at `ended`.
fn pod(name: &str, phase: &str, tracked: bool, code: i32, ended: i64) -> Arc<Pod> {
    let finalizers: Vec<&str> = if tracked { vec![TRACKING] } else { vec![] };
    let state = if phase == "Running" {
        json!({"running": {}})
    } else {
        json!({"terminated": {"exitCode": code, "finishedAt": iso(ended)}})
    };
    Arc::new(serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "finalizers": finalizers},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "image": "x", "imageID": "",
            "ready": phase == "Running", "restartCount": 0, "state": state}]}}))
    .unwrap())
}

fn condition(p: &Plan, type_: &str) -> Option<(String, String)> {
    let c = p
        .status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

#[test]
fn a_new_job_starts_parallelism_pods_and_its_clock() {
    let p = plan(&job(json!({}), json!({})), &[], true, NOW);
    assert_eq!(p.create, 2);
    assert!(p.status.start_time.is_some());
    let made = from_template(&job(json!({}), json!({})));
    assert!(
        made.metadata
            .finalizers
            .unwrap()
            .contains(&TRACKING.to_string())
    );
    assert_eq!(made.metadata.owner_references.unwrap()[0].kind, "Job");
}

#[test]
fn a_finished_pod_is_recorded_then_untracked_then_counted_once() {
    let j = job(json!({}), json!({"startTime": iso(NOW)}));
    let done = pod("a", "Succeeded", true, 0, NOW);
    let running = pod("b", "Running", true, 0, 0);
    let p = plan(&j, &[done.clone(), running.clone()], true, NOW);
    let u = p.status.uncounted_terminated_pods.clone().unwrap();
    assert_eq!(u.succeeded, Some(vec!["uid-a".to_string()]));
    assert_eq!(
        p.status.succeeded, None,
        "not counted before its finalizer goes"
    );
    assert_eq!(p.untrack.len(), 1);
    assert_eq!(p.create, 1, "two wanted (3 - 1 succeeded), one running");
    // The finalizer went; the next sync counts it.
    let j = job(json!({}), serde_json::to_value(&p.status).unwrap());
    let untracked = pod("a", "Succeeded", false, 0, NOW);
    let p = plan(&j, &[untracked.clone(), running.clone()], true, NOW);
    assert_eq!(p.status.succeeded, Some(1));
    assert!(
        p.status
            .uncounted_terminated_pods
            .as_ref()
            .is_none_or(|u| u.succeeded.is_none())
    );
    let again = plan(
        &job(json!({}), serde_json::to_value(&p.status).unwrap()),
        &[untracked, running],
        true,
        NOW,
    );
    assert_eq!(again.status.succeeded, Some(1), "counted once");
}

#[test]
fn completions_reached_completes_once_nothing_runs() {
    let j = job(json!({}), json!({"startTime": iso(NOW), "succeeded": 3}));
    let p = plan(&j, &[pod("a", "Succeeded", false, 0, NOW)], true, NOW);
    assert_eq!(
        condition(&p, "Complete"),
        Some(("True".into(), "CompletionsReached".into()))
    );
    assert!(p.status.completion_time.is_some());
    assert_eq!(p.create, 0);
}

#[test]
fn failures_past_the_backoff_limit_fail_the_job_after_its_pods_stop() {
    let j = job(json!({}), json!({"startTime": iso(NOW), "failed": 2}));
    let running = pod("c", "Running", true, 0, 0);
    let p = plan(&j, &[running], true, NOW);
    assert_eq!(
        condition(&p, "FailureTarget"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
    assert_eq!(p.delete.len(), 1, "its running pod is deleted");
    assert!(
        condition(&p, "Failed").is_none(),
        "not failed while a pod runs"
    );
    let p = plan(
        &job(json!({}), serde_json::to_value(&p.status).unwrap()),
        &[],
        true,
        NOW,
    );
    assert_eq!(
        condition(&p, "Failed"),
        Some(("True".into(), "BackoffLimitExceeded".into()))
    );
}

#[test]
fn a_fail_job_rule_fails_at_the_first_such_exit() {
    let rules = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]});
    let j = job(
        json!({"backoffLimit": 6, "podFailurePolicy": rules}),
        json!({"startTime": iso(NOW)}),
    );
    let p = plan(&j, &[pod("a", "Failed", true, 42, NOW)], true, NOW);
    assert_eq!(
        condition(&p, "FailureTarget"),
        Some(("True".into(), "PodFailurePolicy".into()))
    );
    assert_eq!(p.create, 0);
    // The pod counted and untracked: the Job stays failed, and is Failed now.
    let later = job(
        json!({"backoffLimit": 6, "podFailurePolicy": rules}),
        serde_json::to_value(&p.status).unwrap(),
    );
    let p = plan(&later, &[pod("a", "Failed", false, 42, NOW)], true, NOW);
    assert_eq!(p.create, 0);
    assert_eq!(
        condition(&p, "Failed"),
        Some(("True".into(), "PodFailurePolicy".into()))
    );
}

#[test]
fn failed_pods_are_replaced_after_the_backoff() {
    let j = job(
        json!({"backoffLimit": 6, "parallelism": 1}),
        json!({"startTime": iso(NOW), "failed": 1}),
    );
    let failed = pod("a", "Failed", false, 1, NOW - 2_000);
    let p = plan(&j, std::slice::from_ref(&failed), true, NOW);
    assert_eq!(p.create, 0);
    assert_eq!(p.requeue, Some(std::time::Duration::from_secs(8)));
    assert_eq!(plan(&j, &[failed], true, NOW + 8_000).create, 1);
}

#[test]
fn the_deadline_fails_the_job_and_is_waited_for() {
    let j = job(
        json!({"activeDeadlineSeconds": 30}),
        json!({"startTime": iso(NOW - 10_000)}),
    );
    let p = plan(&j, &[pod("a", "Running", true, 0, 0)], true, NOW);
    assert_eq!(p.requeue, Some(std::time::Duration::from_secs(20)));
    let p = plan(&j, &[pod("a", "Running", true, 0, 0)], true, NOW + 20_000);
    assert_eq!(
        condition(&p, "FailureTarget"),
        Some(("True".into(), "DeadlineExceeded".into()))
    );
}

#[test]
fn a_suspended_job_runs_nothing_and_a_finished_one_goes_after_its_ttl() {
    let j = job(json!({"suspend": true}), json!({"startTime": iso(NOW)}));
    let p = plan(&j, &[pod("a", "Running", true, 0, 0)], true, NOW);
    assert_eq!(p.delete.len(), 1);
    assert_eq!(
        condition(&p, "Suspended"),
        Some(("True".into(), "JobSuspended".into()))
    );
    let done = json!({"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": iso(NOW - 10_000)}]});
    let p = plan(
        &job(json!({"ttlSecondsAfterFinished": 5}), done.clone()),
        &[],
        true,
        NOW,
    );
    assert!(p.delete_job);
    let p = plan(
        &job(json!({"ttlSecondsAfterFinished": 60}), done),
        &[pod("a", "Succeeded", true, 0, NOW)],
        true,
        NOW,
    );
    assert!(!p.delete_job);
    assert_eq!(p.requeue, Some(std::time::Duration::from_secs(50)));
    assert_eq!(
        p.untrack.len(),
        1,
        "a finished job's pods lose their finalizers"
    );
}
