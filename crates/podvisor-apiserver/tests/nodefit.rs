//! Node-fit admission inside a real store: taints, cordon and capacity refuse a pod for
//! this node at create, with the reason as the cause; mirrors and other nodes' pods pass.

use std::sync::Arc;

use podvisor_apiserver::nodefit::NodeFit;
use podvisor_client::{Error as StoreError, PostParams as WriteOptions};
use podvisor_core::Kind;
use podvisor_store::testing::JsonWrites;
use podvisor_store::{Resource, Store, StoreConfig};
use serde_json::{Value, json};

const W: WriteOptions = WriteOptions { dry_run: false };

fn store(name: &str) -> Store {
    let d = std::env::temp_dir()
        .join("podvisor-nodefit")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let mut s = Store::open(&StoreConfig {
        path: d.join("s.redb"),
        window: 100,
    })
    .unwrap();
    s.set_admission(vec![Arc::new(NodeFit::new("n1"))]);
    s
}

fn node(s: &mut Store, spec: Value, pods: u32) {
    let nodes = Resource::of(Kind::Node);
    s.create_v(
        &nodes,
        json!({"metadata": {"name": "n1"}, "spec": spec}),
        None,
        W,
    )
    .unwrap();
    let mut v = s.get(Kind::Node, "", "n1").unwrap().value();
    v["status"] = json!({"allocatable": {"pods": pods.to_string(), "cpu": "2", "memory": "1Gi"}});
    s.update_v(&nodes, v, true, W).unwrap();
}

fn pod(name: &str, tolerations: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"nodeName": "n1", "tolerations": tolerations,
        "containers": [{"name": "c", "image": "x:1", "resources": {"requests": {"cpu": "500m"}}}]}})
}

fn create(s: &mut Store, body: Value) -> Result<(), (String, String)> {
    match s.create_v(&Resource::of(Kind::Pod), body, Some("default"), W) {
        Ok(_) => Ok(()),
        Err(StoreError::Forbidden { cause, message, .. }) => Err((message, cause)),
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn taints_are_checked_at_create() {
    let mut s = store("taints");
    node(
        &mut s,
        json!({"taints": [{"key": "gpu", "value": "yes", "effect": "NoExecute"},
                          {"key": "maint", "effect": "NoSchedule"},
                          {"key": "soft", "effect": "PreferNoSchedule"}]}),
        10,
    );
    let (msg, cause) = create(&mut s, pod("plain", json!([]))).unwrap_err();
    assert_eq!(cause, "TaintToleration");
    assert!(msg.contains("gpu=yes:NoExecute"), "{msg}");
    let only_gpu = json!([{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]);
    let (msg, _) = create(&mut s, pod("half", only_gpu)).unwrap_err();
    assert!(
        msg.contains("maint:NoSchedule"),
        "NoSchedule counts too: {msg}"
    );
    let both =
        json!([{"key": "gpu", "operator": "Exists"}, {"key": "maint", "operator": "Exists"}]);
    assert_eq!(
        create(&mut s, pod("ok", both)),
        Ok(()),
        "PreferNoSchedule never refuses"
    );
    let mut other = pod("elsewhere", json!([]));
    other["spec"]["nodeName"] = "n2".into();
    assert_eq!(create(&mut s, other), Ok(()));
    let mut mirror = pod("mirror", json!([]));
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc"});
    assert_eq!(
        create(&mut s, mirror),
        Ok(()),
        "static pods are the node's own"
    );
}

#[test]
fn a_cordoned_node_refuses_what_does_not_tolerate_it() {
    let mut s = store("cordon");
    node(&mut s, json!({"unschedulable": true}), 10);
    assert_eq!(
        create(&mut s, pod("a", json!([]))).unwrap_err().1,
        "NodeUnschedulable"
    );
    let tolerant = json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]);
    assert_eq!(create(&mut s, pod("b", tolerant)), Ok(()));
}

#[test]
fn capacity_counts_the_pods_that_still_hold_resources() {
    let mut s = store("capacity");
    node(&mut s, json!({}), 3);
    for n in ["a", "b", "c"] {
        assert_eq!(create(&mut s, pod(n, json!([]))), Ok(()), "{n}");
    }
    let (msg, cause) = create(&mut s, pod("d", json!([]))).unwrap_err();
    assert_eq!(cause, "OutOfpods");
    assert!(msg.contains("used: 3, capacity: 3"), "{msg}");
    // A finished pod frees its slot.
    let mut done = s.get(Kind::Pod, "default", "a").unwrap().value();
    done["status"] = json!({"phase": "Succeeded"});
    s.update_v(&Resource::of(Kind::Pod), done, true, W).unwrap();
    assert_eq!(create(&mut s, pod("d", json!([]))), Ok(()));
    // CPU: 2 cores, 500m each: the fifth would be 2.5.
    let mut big = pod("big", json!([]));
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1".into();
    let mut s2 = store("cpu");
    node(&mut s2, json!({}), 10);
    assert_eq!(create(&mut s2, big.clone()), Ok(()));
    big["metadata"]["name"] = "big2".into();
    assert_eq!(create(&mut s2, big.clone()), Ok(()));
    big["metadata"]["name"] = "big3".into();
    assert_eq!(create(&mut s2, big).unwrap_err().1, "OutOfcpu");
}

#[test]
fn a_node_selector_the_node_does_not_match_and_a_taken_host_port_are_refused() {
    let mut s = store("placement");
    node(&mut s, json!({}), 10);
    let nodes = Resource::of(Kind::Node);
    let mut v = s.get(Kind::Node, "", "n1").unwrap().value();
    v["metadata"]["labels"] = json!({"disk": "ssd"});
    s.update_v(&nodes, v, false, W).unwrap();
    let mut hdd = pod("hdd", json!([]));
    hdd["spec"]["nodeSelector"] = json!({"disk": "hdd"});
    let (msg, cause) = create(&mut s, hdd).unwrap_err();
    assert_eq!(cause, "NodeAffinity");
    assert!(
        msg.contains("didn't match Pod's node affinity/selector"),
        "{msg}"
    );
    let mut ssd = pod("ssd", json!([]));
    ssd["spec"]["nodeSelector"] = json!({"disk": "ssd"});
    assert_eq!(create(&mut s, ssd), Ok(()));

    let with_port = |name: &str| {
        let mut p = pod(name, json!([]));
        p["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
        p
    };
    assert_eq!(create(&mut s, with_port("first")), Ok(()));
    assert_eq!(
        create(&mut s, with_port("second")).unwrap_err().1,
        "NodePorts"
    );
}
