//! Admission inside a real store: what an update may not change (the spec beyond its
//! mutable fields, existing tolerations, the mirror annotation, a ReplicaSet's selector),
//! and a status that does not parse as its kind.

use std::sync::Arc;

use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_client::{Error as StoreError, PostParams as WriteOptions};
use podvisor_core::Kind;
use podvisor_store::testing::JsonWrites;
use podvisor_store::{Resource, Store, StoreConfig};
use serde_json::{Value, json};

const W: WriteOptions = WriteOptions { dry_run: false };

fn store(name: &str) -> Store {
    let d = std::env::temp_dir()
        .join("podvisor-admission")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let mut s = Store::open(&StoreConfig {
        path: d.join("s.redb"),
        window: 100,
    })
    .unwrap();
    let node = NodeInfo {
        node_name: "n1".into(),
    };
    s.set_admission(vec![Arc::new(ObjectAdmission::new(node))]);
    s
}

fn current(s: &Store) -> Value {
    s.get(Kind::Pod, "default", "p").unwrap().value()
}

fn refused(r: Result<Vec<podvisor_store::Change>, StoreError>) -> String {
    match r {
        Err(e @ (StoreError::Invalid { .. } | StoreError::BadRequest(_))) => e.to_string(),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_pod_update_keeps_what_kubernetes_keeps() {
    let mut s = store("pods");
    let pods = Resource::of(Kind::Pod);
    let body = json!({"metadata": {"name": "p"}, "spec": {
        "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
        "containers": [{"name": "c", "image": "x:1"}]}});
    s.create_v(&pods, body, Some("default"), W).unwrap();
    let mut v = current(&s);
    v["spec"]["tolerations"][0]["tolerationSeconds"] = 10.into();
    v["spec"]["tolerations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "b", "operator": "Exists"}));
    v["spec"]["containers"][0]["image"] = "x:2".into();
    s.update_v(&pods, v, false, W)
        .expect("seconds changed, a toleration added, an image changed");
    let mut gone = current(&s);
    gone["spec"]["tolerations"] = json!([{"key": "b", "operator": "Exists"}]);
    assert!(refused(s.update_v(&pods, gone, false, W)).contains("spec.tolerations"));
    let mut mirrored = current(&s);
    mirrored["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc"});
    assert!(refused(s.update_v(&pods, mirrored, false, W)).contains("config.mirror"));
    let mut respec = current(&s);
    respec["spec"]["containers"][0]["name"] = "other".into();
    assert!(refused(s.update_v(&pods, respec, false, W)).contains("spec: Forbidden"));
    let mut junk = current(&s);
    junk["status"] = json!({"startTime": "not a time"});
    refused(s.update_v(&pods, junk, true, W));
    assert!(
        s.get(Kind::Pod, "default", "p")
            .unwrap()
            .typed::<k8s_openapi::api::core::v1::Pod>()
            .is_ok()
    );
}

#[test]
fn a_replica_sets_selector_is_immutable() {
    let mut s = store("rs");
    let rs = Resource::of(Kind::ReplicaSet);
    let body = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web", "v": "1"}},
            "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}});
    s.create_v(&rs, body, Some("default"), W).unwrap();
    let mut v = s.get(Kind::ReplicaSet, "default", "web").unwrap().value();
    v["spec"]["selector"]["matchLabels"]["v"] = "1".into();
    assert!(refused(s.update_v(&rs, v, false, W)).contains("spec.selector"));
}
