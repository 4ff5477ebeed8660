use std::sync::Arc;

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_client::WatchEvent;
use podvisor_machinery::reflector::Update;

fn pod(uid: &str, phase: &str) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some("web".into());
    p.metadata.namespace = Some("default".into());
    p.metadata.uid = Some(uid.into());
    p.status = Some(PodStatus {
        phase: Some(phase.into()),
        ..PodStatus::default()
    });
    Arc::new(p)
}

fn deleting(p: &Arc<Pod>, grace: i64) -> Arc<Pod> {
    let mut d = (**p).clone();
    d.metadata.deletion_timestamp = Some(Time(Default::default()));
    d.metadata.deletion_grace_period_seconds = Some(grace);
    Arc::new(d)
}

fn modified(p: &Arc<Pod>) -> Update<Pod> {
    Update::Change(WatchEvent::Modified(p.clone()))
}

#[test]
fn a_status_goes_up_once_and_again_only_when_it_changes() {
    let mut u = Uplink::default();
    let running = pod("u1", "Running");
    u.observe(Update::Reset(vec![running.clone()]));
    let jobs = u.next(8);
    assert_eq!(jobs.len(), 1);
    assert!(jobs[0].status && jobs[0].deletion.is_none());
    assert!(u.next(8).is_empty(), "in flight: not started twice");
    u.done(&jobs[0], true);
    u.observe(modified(&running));
    assert!(u.next(8).is_empty(), "the same status is not written again");
    u.observe(modified(&pod("u1", "Succeeded")));
    assert_eq!(u.next(8).len(), 1);
}

#[test]
fn failed_work_is_due_again_and_only_the_latest_status_goes() {
    let mut u = Uplink::default();
    u.observe(Update::Reset(vec![pod("u1", "Pending")]));
    let jobs = u.next(8);
    u.observe(modified(&pod("u1", "Running")));
    u.done(&jobs[0], false);
    assert!(u.next(8).is_empty(), "parked until the backoff runs out");
    u.unpark();
    let again = u.next(8);
    assert_eq!(again.len(), 1);
    let phase = again[0].pod.status.as_ref().unwrap().phase.as_deref();
    assert_eq!(phase, Some("Running"));
}

#[test]
fn the_node_s_deletions_go_up_graceful_first_then_the_removal() {
    let mut u = Uplink::default();
    let p = pod("u1", "Running");
    u.observe(Update::Reset(vec![p.clone()]));
    let first = u.next(8);
    u.done(&first[0], true);
    u.observe(modified(&deleting(&p, 30)));
    let graceful = u.next(8);
    assert_eq!(graceful[0].deletion, Some(Deletion::Graceful(30)));
    assert!(!graceful[0].status, "the status did not change");
    u.done(&graceful[0], true);
    let finished = deleting(&pod("u1", "Succeeded"), 30);
    u.observe(Update::Change(WatchEvent::Deleted(finished)));
    let last = u.next(8);
    assert_eq!(last[0].deletion, Some(Deletion::Finished));
    assert!(
        last[0].status,
        "the final status goes up before the removal"
    );
    u.done(&last[0], true);
    assert_eq!(u.due(), 0);
    assert!(u.next(8).is_empty());
}

#[test]
fn a_copy_forgotten_because_the_cluster_dropped_it_writes_nothing() {
    let mut u = Uplink::default();
    let p = pod("u1", "Running");
    u.observe(Update::Reset(vec![p.clone()]));
    let jobs = u.next(8);
    u.done(&jobs[0], true);
    u.observe(Update::Change(WatchEvent::Deleted(p)));
    assert!(u.next(8).is_empty());
    assert_eq!(u.due(), 0);
}

#[test]
fn at_most_room_jobs_start() {
    let mut u = Uplink::default();
    let pods: Vec<_> = (0..5)
        .map(|i| {
            let mut p = (*pod(&format!("u{i}"), "Running")).clone();
            p.metadata.name = Some(format!("p{i}"));
            Arc::new(p)
        })
        .collect();
    u.observe(Update::Reset(pods));
    assert_eq!(u.next(2).len(), 2);
    assert_eq!(u.next(8).len(), 3);
    assert_eq!(u.due(), 5);
}

/// Pods the cluster keeps refusing (a copy it no longer has, Forbidden) wait out the
/// backoff aside: a fresh pod's status still starts at once. They took every slot before,
/// in key order, and the statuses of pods in later namespaces never went up.
#[test]
fn refused_work_does_not_starve_fresh_statuses() {
    let mut u = Uplink::default();
    let named = |ns: &str, i: usize| {
        let mut p = (*pod(&format!("{ns}{i}"), "Running")).clone();
        p.metadata.namespace = Some(ns.into());
        p.metadata.name = Some(format!("p{i}"));
        Arc::new(p)
    };
    let stuck: Vec<_> = (0..8).map(|i| named("a", i)).collect();
    u.observe(Update::Reset(stuck));
    let jobs = u.next(8);
    assert_eq!(jobs.len(), 8);
    for j in &jobs {
        u.done(j, false);
    }
    u.observe(modified(&named("z", 0)));
    let fresh = u.next(8);
    assert_eq!(fresh.len(), 1, "only the fresh pod starts");
    assert_eq!(fresh[0].key.0, "z");
    assert_eq!(u.due(), 9);
    u.unpark();
    assert_eq!(
        u.next(8).len(),
        8,
        "the refused ones, once the backoff ran out"
    );
}

#[test]
fn a_first_write_the_authorizer_refused_is_retried_alone_a_few_times() {
    let mut u = Uplink::default();
    u.observe(Update::Reset(vec![pod("u1", "Pending"), pod2("u2")]));
    let jobs = u.next(8);
    let web = |j: &&Job| j.key.1 == "web";
    let (first, other) = (
        jobs.iter().find(web).unwrap(),
        jobs.iter().find(|j| !web(j)).unwrap(),
    );
    // The Node authorizer may not know yet that the pod is bound here: retried on its own,
    // not with the shared backoff.
    for _ in 0..LAG_RETRIES {
        assert!(u.retry_soon(first));
        assert!(u.next(8).is_empty(), "parked until its short wait ends");
        u.unpark_one(&first.key);
        assert_eq!(u.next(8).len(), 1);
    }
    assert!(!u.retry_soon(first), "then it is an ordinary failure");
    u.done(first, false);
    // Once the pod's status is in the cluster, a write is a patch from it: a refusal then
    // means the pod is no longer the node's.
    u.unpark();
    let again = u.next(8);
    u.done(&again[0], true);
    u.observe(modified(&pod("u1", "Running")));
    let patch = u.next(8);
    assert!(patch[0].base.is_some() && !u.retry_soon(&patch[0]));
    u.done(other, false);
}

fn pod2(uid: &str) -> Arc<Pod> {
    let mut p = (*pod(uid, "Pending")).clone();
    p.metadata.name = Some("other".into());
    Arc::new(p)
}

#[test]
fn the_pod_is_not_kept_and_a_pushed_status_seen_again_is_one_copy() {
    let mut u = Uplink::default();
    let running = pod("u1", "Running");
    u.observe(Update::Reset(vec![running.clone()]));
    assert_eq!(Arc::strong_count(&running), 1, "the decoded pod is let go");
    let jobs = u.next(8);
    u.done(&jobs[0], true);
    // The node's own write comes back through the watch: an equal status, decoded anew.
    u.observe(modified(&pod("u1", "Running")));
    assert!(u.next(8).is_empty(), "nothing to write");
    // Then deleted by the node, the status unchanged: the copy kept is the one written.
    let deleting = deleting(&pod("u1", "Running"), 0);
    u.observe(modified(&deleting));
    let jobs = u.next(8);
    assert!(!jobs[0].status, "the status was written already");
    assert_eq!(jobs[0].deletion, Some(Deletion::Graceful(0)));
    let (base, now) = (jobs[0].base.as_ref(), jobs[0].pod.status.as_ref());
    assert!(Arc::ptr_eq(base.unwrap(), now.unwrap()), "one copy of it");
}

#[test]
fn a_status_equal_to_the_published_one_is_that_copy() {
    let shared = SharedStatuses::default();
    let mut u = Uplink::sharing(shared.clone(), FirstCopies::default());
    let published = Arc::new(pod("u1", "Running").status.clone().unwrap());
    shared.publish(&"u1".into(), &published);
    // The store's watch brings the same status back, decoded anew.
    u.observe(Update::Reset(vec![pod("u1", "Running")]));
    let jobs = u.next(8);
    let kept = jobs[0].pod.status.as_ref().unwrap();
    assert!(
        Arc::ptr_eq(kept, &published),
        "the published copy, not a third"
    );
    u.done(&jobs[0], true);
    // Another writer's condition beside it: not the published status, a copy of its own.
    let mut other = (*pod("u1", "Running")).clone();
    other.status.as_mut().unwrap().reason = Some("Evicted".into());
    u.observe(modified(&Arc::new(other)));
    let jobs = u.next(8);
    let kept = jobs[0].pod.status.as_ref().unwrap();
    assert!(!Arc::ptr_eq(kept, &published));
    assert_eq!(kept.reason.as_deref(), Some("Evicted"));
}

#[test]
fn a_new_pod_with_the_clusters_own_status_owes_nothing_and_its_first_write_patches_from_it() {
    let first = FirstCopies::default();
    let mut u = Uplink::sharing(SharedStatuses::default(), first.clone());
    let theirs = Arc::new(pod("u1", "Pending").status.clone().unwrap());
    first.hand_over("u1", theirs.clone());
    // The copy comes back through the store's watch, decoded anew.
    u.observe(Update::Change(WatchEvent::Added(pod("u1", "Pending"))));
    assert!(
        u.next(8).is_empty(),
        "the cluster has it: no read, no write"
    );
    // The node's first status: a patch from the cluster's, its refusal as Forbidden maybe
    // the authorizer's lag.
    u.observe(modified(&pod("u1", "Running")));
    let jobs = u.next(8);
    assert!(Arc::ptr_eq(jobs[0].base.as_ref().unwrap(), &theirs));
    assert!(jobs[0].first && u.retry_soon(&jobs[0]));
    u.unpark_one(&jobs[0].key);
    let jobs = u.next(8);
    u.done(&jobs[0], true);
    u.observe(modified(&pod("u1", "Succeeded")));
    let jobs = u.next(8);
    assert!(
        !jobs[0].first && !u.retry_soon(&jobs[0]),
        "written once: a refusal is final"
    );
}

#[test]
fn a_first_copy_unlike_the_clusters_status_is_owed_and_read_first() {
    let first = FirstCopies::default();
    let mut u = Uplink::sharing(SharedStatuses::default(), first.clone());
    // Handed over for another incarnation, or a copy the node turned away (Failed).
    first.hand_over("u1", Arc::new(pod("u1", "Pending").status.clone().unwrap()));
    u.observe(Update::Change(WatchEvent::Added(pod("u1", "Failed"))));
    let jobs = u.next(8);
    assert_eq!(jobs.len(), 1);
    assert!(jobs[0].base.is_none() && jobs[0].first);
    // What was handed over is taken once, whatever came of it.
    u.observe(Update::Change(WatchEvent::Deleted(pod("u1", "Failed"))));
    assert!(first.take("u1").is_none());
}
