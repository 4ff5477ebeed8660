use podvisor_cri::{Container, PodRef, Sandbox};

use super::*;
use PlegEventKind::*;

fn container(id: &str, name: &str, state: ContainerState) -> Container {
    Container {
        id: id.into(),
        sandbox_id: "s1".into(),
        name: name.into(),
        attempt: 0,
        state,
        created_at: 0,
        managed_by: None,
        grace_period: None,
        labelled_pod: None,
    }
}

fn sandbox(id: &str, state: SandboxState) -> Sandbox {
    Sandbox {
        id: id.into(),
        pod: PodRef {
            uid: "u1".into(),
            ..Default::default()
        },
        attempt: 0,
        state,
        created_at: 0,
        managed_by: None,
    }
}

fn pod(sandboxes: Vec<Sandbox>, containers: Vec<Container>) -> Pod {
    Pod {
        pod: PodRef {
            uid: "u1".into(),
            ..Default::default()
        },
        sandboxes,
        containers,
    }
}

fn rec(p: &Pod) -> RuntimeRecord {
    p.clone().into()
}

fn diff(uid: &str, old: Option<&Pod>, new: Option<&Pod>) -> Vec<PodLifecycleEvent> {
    compute_events(
        &PodUid::from(uid),
        old.map(rec).as_ref(),
        new.map(rec).as_ref(),
    )
}

fn kinds(events: &[PodLifecycleEvent]) -> Vec<(PlegEventKind, &str)> {
    events.iter().map(|e| (e.kind, e.id.as_str())).collect()
}

#[test]
fn first_sight_reports_every_running_and_exited_container() {
    let new = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![
            container("c1", "web", ContainerState::Running),
            container("c2", "init", ContainerState::Exited),
            container("c3", "late", ContainerState::Created),
        ],
    );
    let e = diff("u1", None, Some(&new));
    assert_eq!(
        kinds(&e),
        [
            (ContainerStarted, "c1"),
            (ContainerDied, "c2"),
            (ContainerChanged, "c3")
        ]
    );
    assert_eq!(e[0].container, "web");
}

#[test]
fn an_unchanged_pod_emits_nothing() {
    let p = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![container("c1", "web", ContainerState::Running)],
    );
    assert!(diff("u1", Some(&p), Some(&p.clone())).is_empty());
}

#[test]
fn running_to_exited_is_a_death() {
    let old = pod(
        vec![],
        vec![container("c1", "web", ContainerState::Running)],
    );
    let new = pod(vec![], vec![container("c1", "web", ContainerState::Exited)]);
    assert_eq!(
        kinds(&diff("u1", Some(&old), Some(&new))),
        [(ContainerDied, "c1")]
    );
}

#[test]
fn a_container_that_vanished_while_running_died_and_was_removed() {
    let old = pod(
        vec![],
        vec![container("c1", "web", ContainerState::Running)],
    );
    let new = pod(vec![], vec![]);
    assert_eq!(
        kinds(&diff("u1", Some(&old), Some(&new))),
        [(ContainerDied, "c1"), (ContainerRemoved, "c1")]
    );
    // A whole pod that vanished likewise.
    assert_eq!(
        kinds(&diff("u1", Some(&old), None)),
        [(ContainerDied, "c1"), (ContainerRemoved, "c1")]
    );
}

#[test]
fn an_exited_container_that_vanished_was_only_removed() {
    let old = pod(vec![], vec![container("c1", "web", ContainerState::Exited)]);
    assert_eq!(
        kinds(&diff("u1", Some(&old), None)),
        [(ContainerRemoved, "c1")]
    );
}

#[test]
fn a_sandbox_only_change_is_a_pod_sync() {
    let c = container("c1", "web", ContainerState::Exited);
    let old = pod(vec![sandbox("s1", SandboxState::Ready)], vec![c.clone()]);
    let new = pod(vec![sandbox("s1", SandboxState::NotReady)], vec![c.clone()]);
    assert_eq!(
        kinds(&diff("u1", Some(&old), Some(&new))),
        [(PodSync, "s1")]
    );
    // A new sandbox, no containers yet.
    let fresh = pod(vec![sandbox("s2", SandboxState::Ready)], vec![]);
    assert_eq!(kinds(&diff("u1", None, Some(&fresh))), [(PodSync, "s2")]);
    // Container events already make the pod sync: no extra PodSync.
    let started = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![container("c1", "web", ContainerState::Running)],
    );
    assert_eq!(
        kinds(&diff("u1", None, Some(&started))),
        [(ContainerStarted, "c1")]
    );
}

#[test]
fn records_diff_against_the_last_delivered_state() {
    let mut r = PodRecords::default();
    let running = pod(
        vec![],
        vec![container("c1", "web", ContainerState::Running)],
    );
    r.set_current(vec![running.clone()]);
    assert_eq!(
        kinds(&r.events(&PodUid::from("u1"))),
        [(ContainerStarted, "c1")]
    );
    // Not delivered (inspection failed): the next relist reports it again.
    r.set_current(vec![running.clone()]);
    assert_eq!(
        kinds(&r.events(&PodUid::from("u1"))),
        [(ContainerStarted, "c1")]
    );
    r.update(&PodUid::from("u1"));
    r.set_current(vec![running.clone()]);
    assert!(r.events(&PodUid::from("u1")).is_empty());
    assert_eq!(
        r.pod_of_container("c1").as_ref().map(PodUid::as_str),
        Some("u1")
    );
    r.update(&PodUid::from("u1"));
    // Gone from the runtime: died and removed, then forgotten.
    r.set_current(vec![]);
    assert_eq!(
        kinds(&r.events(&PodUid::from("u1"))),
        [(ContainerDied, "c1"), (ContainerRemoved, "c1")]
    );
    r.update(&PodUid::from("u1"));
    assert!(r.is_empty());
}

#[test]
fn stream_events_translate_like_the_kubelet() {
    assert_eq!(translate(ContainerEventKind::Created), []);
    assert_eq!(translate(ContainerEventKind::Started), [ContainerStarted]);
    assert_eq!(translate(ContainerEventKind::Stopped), [ContainerDied]);
    assert_eq!(
        translate(ContainerEventKind::Deleted),
        [ContainerDied, ContainerRemoved]
    );
}

#[test]
fn a_relist_diff_settles_quiet_pods_and_returns_the_changed_ones() {
    let mut r = PodRecords::default();
    let web = pod(
        vec![],
        vec![container("c1", "web", ContainerState::Running)],
    );
    let mut other = pod(vec![], vec![container("c2", "db", ContainerState::Running)]);
    other.pod.uid = "u2".into();
    r.set_current(vec![web.clone(), other.clone()]);
    let mut changed = r.changes(|_| false);
    changed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(changed.len(), 2);
    r.update(&PodUid::from("u1"));
    r.update(&PodUid::from("u2"));
    let mut exited = other.clone();
    exited.containers[0].state = ContainerState::Exited;
    r.set_current(vec![web.clone(), exited.clone()]);
    let changed = r.changes(|_| false);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].0, "u2");
    assert_eq!(kinds(&changed[0].1), [(ContainerDied, "c2")]);
    // u2 is not settled until inspected: the next relist reports it again, u1 nothing.
    r.set_current(vec![web.clone(), exited.clone()]);
    let changed = r.changes(|_| false);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].0, "u2");
    r.update(&PodUid::from("u2"));
    r.set_current(vec![web.clone(), exited.clone()]);
    assert!(r.changes(|_| false).is_empty());
    // Forced: listed even without events.
    r.set_current(vec![web, exited]);
    assert_eq!(r.changes(|uid| uid == "u1").len(), 1);
}

#[test]
fn a_reinspected_status_rebuilds_the_same_record() {
    let status = PodStatus {
        pod: PodRef {
            uid: "u1".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(record_from_status(&status), None, "nothing in the runtime");
}

#[test]
fn a_started_container_shows_in_the_latest_record_running_or_exited() {
    let u1 = PodUid::from("u1");
    let mut r = PodRecords::default();
    assert!(!r.shows_started(&u1, "c1"), "an unknown pod shows nothing");
    let created = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![container("c1", "web", ContainerState::Created)],
    );
    r.set_current(vec![created]);
    assert!(!r.shows_started(&u1, "c1"), "created is not started");
    let running = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![container("c1", "web", ContainerState::Running)],
    );
    r.set_one(&u1, Some(rec(&running)));
    assert!(r.shows_started(&u1, "c1") && !r.shows_started(&u1, "c2"));
    // Settled, it is the old record that shows it; exited since, it still started.
    r.update(&u1);
    assert!(r.shows_started(&u1, "c1"));
    let exited = pod(
        vec![sandbox("s1", SandboxState::Ready)],
        vec![container("c1", "web", ContainerState::Exited)],
    );
    r.set_one(&u1, Some(rec(&exited)));
    assert!(r.shows_started(&u1, "c1"));
    // Gone from the latest record: it shows nothing of it any more.
    r.set_one(&u1, Some(rec(&pod(vec![], vec![]))));
    assert!(!r.shows_started(&u1, "c1"));
}
