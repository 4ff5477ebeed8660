//! The store as a plain struct: what the API's semantics need from it.

use podvisor_client::{
    DeleteParams as DeleteOptions, Error as StoreError, PostParams as WriteOptions, Propagation,
};
use podvisor_core::Kind;
use podvisor_store::testing::JsonWrites;
use podvisor_store::{ChangeType, Resource, Selector, Store, StoreConfig};
use serde_json::{Value, json};

/// A test's store directory, removed when the test is done with it (kept after a failure,
/// for a look at it).
struct Dir(std::path::PathBuf);

impl std::ops::Deref for Dir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir()
        .join("podvisor-store-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Dir(d)
}

fn open(d: &std::path::Path, window: usize) -> Store {
    Store::open(&StoreConfig {
        path: d.join("store.redb"),
        window,
    })
    .unwrap()
}

const W: WriteOptions = WriteOptions { dry_run: false };

fn pods() -> Resource {
    Resource::of(Kind::Pod)
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": "web"}},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}})
}

fn create(s: &mut Store, body: Value) -> Value {
    s.create_v(&pods(), body, Some("default"), W).unwrap()[0]
        .object
        .value()
}

#[test]
fn create_sets_server_fields_and_refuses_duplicates() {
    let d = dir("create");
    let mut s = open(&d, 100);
    let v = create(&mut s, pod("a"));
    let m = &v["metadata"];
    assert_eq!(v["kind"], "Pod");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(m["namespace"], "default");
    assert_eq!(m["uid"].as_str().unwrap().len(), 36);
    assert!(m["creationTimestamp"].is_string());
    assert_eq!(m["generation"], 1);
    assert_eq!(m["resourceVersion"], s.revision().to_string());
    assert_eq!(v["status"]["phase"], "Pending");
    let again = s.create_v(&pods(), pod("a"), Some("default"), W);
    assert!(
        matches!(again, Err(StoreError::AlreadyExists { .. })),
        "{again:?}"
    );
    let generated = create(
        &mut s,
        json!({"metadata": {"generateName": "web-"}, "spec": {}}),
    );
    let name = generated["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    let no_ns = s.create_v(&pods(), pod("b"), Some("nowhere"), W);
    assert!(matches!(
        no_ns,
        Err(StoreError::NotFound { ref resource, .. }) if resource == "namespaces"
    ));
}

#[test]
fn stale_updates_conflict_and_generation_follows_the_spec() {
    let d = dir("update");
    let mut s = open(&d, 100);
    let v = create(&mut s, pod("a"));
    let mut label = v.clone();
    label["metadata"]["labels"]["tier"] = "x".into();
    let after_label = s.update_v(&pods(), label, false, W).unwrap()[0]
        .object
        .value();
    assert_eq!(
        after_label["metadata"]["generation"], 1,
        "a label is not spec"
    );
    // The first version again: stale.
    let stale = s.update_v(&pods(), v.clone(), false, W);
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    let mut spec = after_label.clone();
    spec["spec"]["activeDeadlineSeconds"] = 5.into();
    spec["status"] = json!({"phase": "Running"});
    let after_spec = s.update_v(&pods(), spec, false, W).unwrap()[0]
        .object
        .value();
    assert_eq!(after_spec["metadata"]["generation"], 2);
    assert_eq!(
        after_spec["status"]["phase"], "Pending",
        "status is a subresource"
    );
    let mut status = after_spec.clone();
    status["status"] = json!({"phase": "Running"});
    status["spec"]["activeDeadlineSeconds"] = 9.into();
    let after_status = s.update_v(&pods(), status, true, W).unwrap()[0]
        .object
        .value();
    assert_eq!(after_status["status"]["phase"], "Running");
    assert_eq!(
        after_status["spec"]["activeDeadlineSeconds"], 5,
        "a status write keeps the spec"
    );
    assert_eq!(after_status["metadata"]["uid"], v["metadata"]["uid"]);
}

#[test]
fn objects_above_the_limit_and_dry_runs_are_not_stored() {
    let d = dir("limits");
    let mut s = open(&d, 100);
    let mut big = pod("big");
    big["metadata"]["annotations"] = json!({"x": "y".repeat(1600 * 1024)});
    let e = s.create_v(&pods(), big, Some("default"), W).unwrap_err();
    assert!(matches!(e, StoreError::TooLarge { .. }), "{e}");
    let before = s.revision();
    s.create_v(
        &pods(),
        pod("dry"),
        Some("default"),
        WriteOptions { dry_run: true },
    )
    .unwrap();
    assert_eq!(s.revision(), before);
    assert!(s.get(Kind::Pod, "default", "dry").is_err());
}

#[test]
fn pods_are_deleted_gracefully_and_finalizers_hold_removal() {
    let d = dir("delete");
    let mut s = open(&d, 100);
    let mut p = pod("a");
    p["spec"]["terminationGracePeriodSeconds"] = 7.into();
    create(&mut s, p);
    let (kept, _) = s
        .delete(&pods(), "default", "a", &DeleteOptions::default())
        .unwrap();
    let kept = kept.expect("marked, not removed").value();
    assert_eq!(kept["metadata"]["deletionGracePeriodSeconds"], 7);
    assert!(kept["metadata"]["deletionTimestamp"].is_string());
    // A second, longer request changes nothing; a shorter one shortens.
    let (again, changes) = s
        .delete(
            &pods(),
            "default",
            "a",
            &DeleteOptions {
                grace_seconds: Some(30),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(again.is_some() && changes.is_empty());
    // The node agent, done: grace 0 with the UID as precondition.
    let wrong = s.delete(&pods(), "default", "a", &DeleteOptions::now_if_uid("other"));
    assert!(matches!(wrong, Err(StoreError::Conflict { .. })));
    let uid = kept["metadata"]["uid"].as_str().unwrap();
    let (gone, changes) = s
        .delete(&pods(), "default", "a", &DeleteOptions::now_if_uid(uid))
        .unwrap();
    assert!(gone.is_none());
    assert_eq!(changes[0].kind, ChangeType::Deleted);
    assert!(s.get(Kind::Pod, "default", "a").is_err());
    // A pod deleted at once (--force --grace-period=0) goes with its last state marked
    // deleted with grace 0, which is what tells the node agent to stop it at once.
    create(&mut s, pod("forced"));
    let now = DeleteOptions {
        grace_seconds: Some(0),
        ..Default::default()
    };
    let (_, changes) = s.delete(&pods(), "default", "forced", &now).unwrap();
    let last = changes[0].object.value();
    assert_eq!(changes[0].kind, ChangeType::Deleted);
    assert_eq!(last["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(last["metadata"]["deletionTimestamp"].is_string());

    let mut held = pod("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    held["spec"]["nodeName"] = "".into(); // never bound: no grace period
    create(&mut s, held);
    let (kept, _) = s
        .delete(&pods(), "default", "held", &DeleteOptions::default())
        .unwrap();
    let mut v = kept.expect("held by its finalizer").value();
    v["metadata"]["finalizers"] = json!([]);
    let changes = s.update_v(&pods(), v, false, W).unwrap();
    assert_eq!(
        changes[0].kind,
        ChangeType::Deleted,
        "the last finalizer removed: gone"
    );
    assert_eq!(
        changes[0].object.value()["metadata"]["finalizers"],
        json!([]),
        "its last state is the update that removed it"
    );
}

#[test]
fn deleting_an_owner_deletes_or_orphans_its_dependents() {
    let d = dir("owners");
    let mut s = open(&d, 100);
    let rs = Resource::of(Kind::ReplicaSet);
    let owner = s
        .create_v(
            &rs,
            json!({"metadata": {"name": "rs"}, "spec": {}}),
            Some("default"),
            W,
        )
        .unwrap()[0]
        .object
        .clone();
    for name in ["a", "b"] {
        let mut p = pod(name);
        p["spec"]["nodeName"] = "".into();
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": &*owner.uid, "controller": true}]);
        create(&mut s, p);
    }
    let orphan = DeleteOptions {
        propagation: Propagation::Orphan,
        ..Default::default()
    };
    s.delete(&rs, "default", "rs", &orphan).unwrap();
    let a = s.get(Kind::Pod, "default", "a").unwrap().value();
    assert_eq!(a["metadata"]["ownerReferences"], json!([]));

    let owner = s
        .create_v(
            &rs,
            json!({"metadata": {"name": "rs2"}, "spec": {}}),
            Some("default"),
            W,
        )
        .unwrap()[0]
        .object
        .clone();
    let mut p = pod("c");
    p["spec"]["nodeName"] = "".into();
    p["metadata"]["ownerReferences"] =
        json!([{"kind": "ReplicaSet", "name": "rs2", "uid": &*owner.uid}]);
    create(&mut s, p);
    s.delete(&rs, "default", "rs2", &DeleteOptions::default())
        .unwrap();
    assert!(
        s.get(Kind::Pod, "default", "c").is_err(),
        "background: dependents go too"
    );
    assert!(s.get(Kind::Pod, "default", "a").is_ok());
}

#[test]
fn foreground_deletion_waits_for_the_dependents_that_block_it() {
    let d = dir("foreground");
    let mut s = open(&d, 100);
    let rs = Resource::of(Kind::ReplicaSet);
    let owner = s
        .create_v(
            &rs,
            json!({"metadata": {"name": "rs"}, "spec": {}}),
            Some("default"),
            W,
        )
        .unwrap()[0]
        .object
        .clone();
    for (name, blocks) in [("a", true), ("b", true), ("loose", false)] {
        let mut p = pod(name);
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "rs", "uid": &*owner.uid, "controller": true, "blockOwnerDeletion": blocks}]);
        create(&mut s, p);
    }
    let foreground = DeleteOptions {
        propagation: Propagation::Foreground,
        ..Default::default()
    };
    let (kept, _) = s.delete(&rs, "default", "rs", &foreground).unwrap();
    let kept = kept.expect("the owner waits").value();
    assert!(kept["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        kept["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    for name in ["a", "b", "loose"] {
        let p = s.get(Kind::Pod, "default", name).unwrap().value();
        assert!(
            p["metadata"]["deletionTimestamp"].is_string(),
            "{name} is being deleted (gracefully)"
        );
    }
    // The node agent removes its pods as they stop; the owner goes with the last blocking one.
    let remove = |s: &mut Store, name: &str| {
        let uid = s.get(Kind::Pod, "default", name).unwrap().uid.to_string();
        s.delete(&pods(), "default", name, &DeleteOptions::now_if_uid(&uid))
            .unwrap()
            .1
    };
    remove(&mut s, "a");
    assert!(
        s.get(Kind::ReplicaSet, "default", "rs").is_ok(),
        "b still blocks"
    );
    remove(&mut s, "loose");
    assert!(
        s.get(Kind::ReplicaSet, "default", "rs").is_ok(),
        "b still blocks"
    );
    let changes = remove(&mut s, "b");
    assert!(
        s.get(Kind::ReplicaSet, "default", "rs").is_err(),
        "the last blocking dependent gone: so is the owner"
    );
    assert_eq!(changes.len(), 2, "one transaction: the pod and its owner");
    // An owner without dependents goes at once.
    s.create_v(
        &rs,
        json!({"metadata": {"name": "empty"}, "spec": {}}),
        Some("default"),
        W,
    )
    .unwrap();
    let (kept, _) = s.delete(&rs, "default", "empty", &foreground).unwrap();
    assert!(kept.is_none());
}

#[test]
fn lists_page_with_limit_and_continue_and_select() {
    let d = dir("list");
    let mut s = open(&d, 100);
    for i in 0..5 {
        let mut p = pod(&format!("p{i}"));
        if i == 3 {
            p["metadata"]["labels"]["app"] = "db".into();
        }
        create(&mut s, p);
    }
    let mut sel = Selector::all(Kind::Pod).in_namespace(Some("default"));
    let first = s.list(&sel, Some(2), None).unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.continue_token.clone().expect("more to come");
    let rest = s.list(&sel, None, Some(&token)).unwrap();
    assert_eq!(rest.items.len(), 3);
    assert!(rest.continue_token.is_none());
    assert_ne!(first.items[1].name, rest.items[0].name);
    sel.labels = podvisor_client::LabelSelector::parse("app=db").unwrap();
    let db = s.list(&sel, None, None).unwrap();
    assert_eq!(
        db.items.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["p3"]
    );
    assert!(s.list(&sel, None, Some("zz")).is_err());
}

#[test]
fn the_change_window_survives_reopening_and_older_revisions_are_gone() {
    let d = dir("window");
    let mut s = open(&d, 5);
    let start = s.revision();
    for i in 0..3 {
        create(&mut s, pod(&format!("p{i}")));
    }
    let sel = Selector::all(Kind::Pod);
    let seen: Vec<String> = s
        .changes_since(start, &sel)
        .unwrap()
        .iter()
        .map(|c| c.object.name.clone())
        .collect();
    assert_eq!(seen, ["p0", "p1", "p2"]);
    drop(s);
    let mut s = open(&d, 5);
    assert_eq!(
        s.changes_since(start, &sel).unwrap().len(),
        3,
        "the log is durable"
    );
    for i in 3..8 {
        create(&mut s, pod(&format!("p{i}")));
    }
    let e = s.changes_since(start, &sel).unwrap_err();
    assert!(matches!(e, StoreError::Gone { .. }), "{e}");
    let oldest = s.oldest_resumable();
    assert_eq!(s.changes_since(oldest, &sel).unwrap().len(), 5);
    drop(s);
    let s = open(&d, 5);
    assert_eq!(
        s.oldest_resumable(),
        oldest,
        "the trimmed log stays trimmed"
    );
    assert_eq!(s.list(&sel, None, None).unwrap().items.len(), 8);
}

#[test]
fn events_expire_after_their_ttl_and_nothing_else_does() {
    let d = dir("events");
    let mut s = open(&d, 100);
    let events = Resource::of(Kind::Event);
    let event = |name: &str, last: &str| {
        json!({"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "p"},
               "reason": "R", "message": "m", "lastTimestamp": last})
    };
    for (name, last) in [
        ("old", "2026-01-01T00:00:00Z"),
        ("new", "2026-01-01T02:00:00Z"),
    ] {
        s.create_v(&events, event(name, last), Some("default"), W)
            .unwrap();
    }
    s.create_v(&pods(), pod("p"), Some("default"), W).unwrap();
    let cutoff: k8s_openapi::jiff::Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
    let gone = s
        .expire_events(cutoff.as_millisecond() as u64, 100)
        .unwrap();
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].kind, gone[0].object.name.as_str()),
        (ChangeType::Deleted, "old")
    );
    assert!(s.get(Kind::Event, "default", "new").is_ok());
    assert!(s.get(Kind::Pod, "default", "p").is_ok());
    let d2 = s
        .expire_events(cutoff.as_millisecond() as u64, 100)
        .unwrap();
    assert!(d2.is_empty(), "nothing more to expire, nothing written");
}

#[test]
fn no_execute_taints_get_the_time_they_appeared_and_keep_it() {
    let d = dir("taints");
    let mut s = open(&d, 100);
    let nodes = Resource::of(Kind::Node);
    let node = |taints: Value| json!({"metadata": {"name": "n1"}, "spec": {"taints": taints}});
    let created = s
        .create_v(
            &nodes,
            node(
                json!([{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoSchedule"}]),
            ),
            None,
            W,
        )
        .unwrap()[0]
        .object
        .value();
    let a_added = created["spec"]["taints"][0]["timeAdded"].clone();
    assert!(a_added.is_string(), "{created}");
    assert!(
        created["spec"]["taints"][1].get("timeAdded").is_none(),
        "only NoExecute"
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    // A client that sends the taint back without its time (or with another) keeps it; a
    // new taint gets its own.
    let next = node(json!([
        {"key": "a", "effect": "NoExecute", "timeAdded": "2001-01-01T00:00:00Z"},
        {"key": "c", "value": "1", "effect": "NoExecute"}]));
    let v = s.update_v(&nodes, next, false, W).unwrap()[0]
        .object
        .value();
    assert_eq!(v["spec"]["taints"][0]["timeAdded"], a_added);
    let c_added = v["spec"]["taints"][1]["timeAdded"].clone();
    assert!(c_added.is_string() && c_added != a_added);
    // Removed and added again: a new taint, a new time.
    s.update_v(&nodes, node(json!([])), false, W).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let again = s
        .update_v(
            &nodes,
            node(json!([{"key": "a", "effect": "NoExecute"}])),
            false,
            W,
        )
        .unwrap()[0]
        .object
        .value();
    assert_ne!(again["spec"]["taints"][0]["timeAdded"], a_added);
}

#[test]
fn a_selecting_watch_sees_objects_come_and_go_with_their_labels() {
    let d = dir("transitions");
    let mut s = open(&d, 100);
    let start = s.revision();
    create(&mut s, pod("p"));
    let mut v = s.get(Kind::Pod, "default", "p").unwrap().value();
    v["metadata"]["labels"]["app"] = "db".into();
    s.update_v(&pods(), v, false, W).unwrap();
    let watching = |app: &str| {
        let mut sel = Selector::all(Kind::Pod);
        sel.labels = podvisor_client::LabelSelector::parse(&format!("app={app}")).unwrap();
        s.changes_since(start, &sel)
            .unwrap()
            .iter()
            .map(|c| c.kind)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        watching("web"),
        [ChangeType::Added, ChangeType::Deleted],
        "it left the selection"
    );
    assert_eq!(
        watching("db"),
        [ChangeType::Added],
        "it came into the selection"
    );
}

#[test]
fn every_page_of_a_list_reports_the_first_pages_revision() {
    let d = dir("pages");
    let mut s = open(&d, 100);
    for i in 0..5 {
        create(&mut s, pod(&format!("p{i}")));
    }
    let sel = Selector::all(Kind::Pod);
    let first = s.list(&sel, Some(2), None).unwrap();
    create(&mut s, pod("late"));
    let second = s
        .list(&sel, Some(2), first.continue_token.as_deref())
        .unwrap();
    assert_eq!(
        second.revision, first.revision,
        "a watch from it replays what changed while paging"
    );
    assert!(s.revision() > first.revision);
}

#[test]
fn the_system_namespaces_cannot_be_deleted() {
    let d = dir("system-ns");
    let mut s = open(&d, 100);
    let r = s.delete(
        &Resource::of(Kind::Namespace),
        "",
        "default",
        &DeleteOptions::default(),
    );
    assert!(matches!(r, Err(StoreError::Forbidden { .. })), "{r:?}");
    assert!(s.get(Kind::Namespace, "", "default").is_ok());
}

#[test]
fn changes_older_than_the_fresh_period_go_beyond_the_newest_hundred() {
    use podvisor_store::{WINDOW_FRESH, WINDOW_MIN};
    use std::time::{Duration, Instant};
    let d = dir("window-age");
    let mut s = open(&d, 10_000);
    let start = s.revision();
    for i in 0..250 {
        create(&mut s, pod(&format!("p{i}")));
    }
    let sel = Selector::all(Kind::Pod);
    let t = Instant::now();
    assert_eq!(
        s.expire_window(t + WINDOW_FRESH - Duration::from_secs(5)),
        0
    );
    assert_eq!(
        s.changes_since(start, &sel).unwrap().len(),
        250,
        "fresh ones stay"
    );

    let later = t + WINDOW_FRESH + Duration::from_secs(1);
    // (the system namespaces' creation came first, and went too)
    assert!(s.expire_window(later) >= 250 - WINDOW_MIN);
    let r = s.changes_since(start, &sel);
    assert!(matches!(r, Err(StoreError::Gone { .. })), "stale ones went");
    let oldest = s.oldest_resumable();
    assert_eq!(s.changes_since(oldest, &sel).unwrap().len(), WINDOW_MIN);
    assert_eq!(
        s.expire_window(later),
        0,
        "the newest hundred stay however old"
    );

    create(&mut s, pod("p250"));
    assert_eq!(s.changes_since(oldest, &sel).unwrap().len(), WINDOW_MIN + 1);
    drop(s);
    let mut s = open(&d, 10_000);
    assert_eq!(
        s.oldest_resumable(),
        oldest,
        "the durable log was trimmed too"
    );
    assert_eq!(
        s.expire_window(Instant::now() + WINDOW_FRESH - Duration::from_secs(5)),
        0,
        "what a restart loads is fresh again"
    );
    assert_eq!(s.list(&sel, None, None).unwrap().items.len(), 251);
}

#[test]
fn the_change_window_is_bounded_by_bytes_too() {
    let d = dir("window-bytes");
    let mut s = open(&d, 10_000);
    let start = s.revision();
    let big = "x".repeat(1 << 20);
    let cms = Resource::of(Kind::ConfigMap);
    for i in 0..80 {
        let body = json!({"metadata": {"name": format!("cm{i}")}, "data": {"k": big}});
        s.create_v(&cms, body, Some("default"), W).unwrap();
    }
    let r = s.changes_since(start, &Selector::all(Kind::ConfigMap));
    assert!(
        matches!(r, Err(StoreError::Gone { .. })),
        "80 MiB of changes: the oldest went"
    );
    let kept = s
        .changes_since(s.oldest_resumable(), &Selector::all(Kind::ConfigMap))
        .unwrap();
    assert!(kept.len() < 80 && kept.len() >= 60, "{} kept", kept.len());
}

#[test]
fn foreground_owners_are_never_left_waiting_for_nothing() {
    let d = dir("foreground-edges");
    let mut s = open(&d, 1000);
    let rs = Resource::of(Kind::ReplicaSet);
    let owner = |s: &mut Store, name: &str| {
        s.create_v(
            &rs,
            json!({"metadata": {"name": name}, "spec": {}}),
            Some("default"),
            W,
        )
        .unwrap()[0]
            .object
            .clone()
    };
    let owned = |s: &mut Store, name: &str, owners: &[&podvisor_store::StoredObject]| {
        let mut p = pod(name);
        p["spec"]["nodeName"] = "".into(); // never bound: removed at once
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": o.name, "uid": &*o.uid, "blockOwnerDeletion": true}))
            .collect();
        p["metadata"]["ownerReferences"] = json!(refs);
        create(s, p);
    };
    let foreground = DeleteOptions {
        propagation: Propagation::Foreground,
        ..Default::default()
    };
    // Every dependent removed at once: the owner goes in the same write.
    let a = owner(&mut s, "a");
    owned(&mut s, "a-1", &[&a]);
    let (kept, _) = s.delete(&rs, "default", "a", &foreground).unwrap();
    assert!(kept.is_none() && s.get(Kind::ReplicaSet, "default", "a").is_err());
    // A dependent that loses its reference by an update releases the owner.
    let b = owner(&mut s, "b");
    let mut bound = pod("b-1");
    bound["metadata"]["ownerReferences"] =
        json!([{"kind": "ReplicaSet", "name": "b", "uid": &*b.uid, "blockOwnerDeletion": true}]);
    bound["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&mut s, bound);
    s.delete(&rs, "default", "b", &foreground).unwrap();
    assert!(
        s.get(Kind::ReplicaSet, "default", "b").is_ok(),
        "b-1 blocks it"
    );
    let mut v = s.get(Kind::Pod, "default", "b-1").unwrap().value();
    v["metadata"]["ownerReferences"] = json!([]);
    s.update_v(&pods(), v, false, W).unwrap();
    assert!(
        s.get(Kind::ReplicaSet, "default", "b").is_err(),
        "nothing blocks it any more"
    );
    // A dependent that another existing owner still holds only loses the reference.
    let c = owner(&mut s, "c");
    let e = owner(&mut s, "e");
    owned(&mut s, "shared", &[&c, &e]);
    s.delete(&rs, "default", "c", &DeleteOptions::default())
        .unwrap();
    let shared = s
        .get(Kind::Pod, "default", "shared")
        .expect("e still owns it")
        .value();
    assert_eq!(shared["metadata"]["ownerReferences"][0]["name"], "e");
    assert_eq!(
        shared["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// The store keeps no typed form: each typed read decodes the stored JSON (a typed pod
/// costs several times its JSON's memory), and what it decodes is what was written.
#[test]
fn a_typed_read_decodes_the_stored_json_and_keeps_nothing() {
    use k8s_openapi::api::core::v1::Pod;
    let d = dir("typed");
    let mut s = open(&d, 100);
    let written = s.create_v(&pods(), pod("a"), Some("default"), W).unwrap();
    let answer = written[0].object.typed::<Pod>().unwrap();
    let stored = s.get(Kind::Pod, "default", "a").unwrap();
    let (a, b) = (
        stored.typed::<Pod>().unwrap(),
        stored.typed::<Pod>().unwrap(),
    );
    assert!(
        !std::sync::Arc::ptr_eq(&a, &b),
        "a read's typed form was kept"
    );
    assert_eq!(a, b);
    assert_eq!(*a, *answer);
    assert_eq!(
        a.metadata.resource_version,
        answer.metadata.resource_version
    );
}
