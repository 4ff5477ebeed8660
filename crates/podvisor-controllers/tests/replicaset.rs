//! The ReplicaSet controller against a real store with the API's admission (no kubelet: the
//! pods it makes are only stored): a panic injected in the middle of a slow-start scale-up
//! to 50 ends with exactly 50 pods; a node that refuses pods (OutOfpods) gives the
//! ReplicaFailure condition and retries with backoff, not in a hot loop; orphans are adopted.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::testing::paused_system;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_client::{Api, Client, ListParams, Object, PostParams, WatchEvent};
use podvisor_controllers::replicaset;
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_store::{Admission, LocalClient, StoreActor, StoreConfig};
use serde_json::{Value, json};

const NODE: &str = "n1";

struct Setup {
    store: Client,
    registry: Arc<Registry>,
}

fn typed<K: Object>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn json_of<K: Object>(o: &K) -> Value {
    serde_json::to_value(o).unwrap()
}

const PP: PostParams = PostParams { dry_run: false };

fn setup(name: &str) -> Setup {
    let dir = std::env::temp_dir()
        .join("podvisor-rs-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 100_000,
    };
    let admission: Vec<Arc<dyn Admission>> = vec![
        Arc::new(ObjectAdmission::new(NodeInfo {
            node_name: NODE.into(),
        })),
        Arc::new(NodeFit::new(NODE)),
    ];
    let registry = Registry::new();
    let (store, store_spec) = ChildSpec::of(move || {
        StoreActor::new(cfg.clone(), 100_000).with_admission(admission.clone())
    })
    .capacity(1 << 14)
    .build();
    let client = LocalClient::client(&store);
    let reporter = Reporter {
        component: "replicaset-controller".into(),
        host: NODE.into(),
    };
    let events_api = Api::all(client.clone());
    let (events, events_spec) =
        ChildSpec::of(move || EventRecorder::new(reporter.clone(), events_api.clone())).build();
    let c = client.clone();
    let (_, rs_spec) =
        ChildSpec::of(move || replicaset::controller(NODE, c.clone(), events.recipient()))
            .capacity(1 << 14)
            .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![store_spec, events_spec, rs_spec],
        |e| panic!("escalated: {e:?}"),
    );
    Setup {
        store: client,
        registry,
    }
}

async fn node(store: &Client, pods: u32) {
    let nodes: Api<Node> = Api::all(store.clone());
    let body = typed(json!({"metadata": {"name": NODE}, "spec": {}}));
    let made = nodes.create(&PP, body).await.unwrap();
    let mut next = (*made).clone();
    let status = json!({"allocatable": {"pods": pods.to_string(), "cpu": "64", "memory": "64Gi"}});
    next.status = Some(serde_json::from_value(status).unwrap());
    nodes.replace_status(&PP, next).await.unwrap();
}

fn sets(store: &Client) -> Api<ReplicaSet> {
    Api::namespaced(store.clone(), "default")
}

fn pods_api(store: &Client) -> Api<Pod> {
    Api::namespaced(store.clone(), "default")
}

async fn create_rs(store: &Client, replicas: i32) {
    let body = json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "localhost/x:1"}]}}}});
    sets(store).create(&PP, typed(body)).await.unwrap();
}

async fn pods(store: &Client) -> Vec<Value> {
    let all: Api<Pod> = Api::all(store.clone());
    let page = all.list(&ListParams::default()).await.unwrap();
    page.items.iter().map(|o| json_of(o.as_ref())).collect()
}

async fn rs(store: &Client) -> Value {
    json_of(sets(store).get("web").await.unwrap().as_ref())
}

fn summary(registry: &Registry) -> Value {
    registry
        .tree(0, 100)
        .actors
        .into_iter()
        .find(|a| a.kind == "replicaset-controller")
        .and_then(|a| a.state)
        .unwrap_or_default()
}

#[test]
fn a_panic_in_the_middle_of_a_slow_start_ends_with_exactly_fifty() {
    paused_system().block_on(async {
        let Setup { store, registry } = setup("panic");
        node(&store, 110).await;
        let mut watch = pods_api(&store)
            .watch(&ListParams::default(), "")
            .await
            .unwrap();
        create_rs(&store, 50).await;
        // Crash the controller as soon as its third pod is stored: batches 1 and 2 are done,
        // batch 3 is under way.
        let mut n = 0;
        while n < 3 {
            if let Some(Ok(WatchEvent::Added(_))) = watch.next().await {
                n += 1;
            }
        }
        assert!(registry.inject_panic("replicaset-controller", "injected"));
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if pods(&store).await.len() >= 50 && rs(&store).await["status"]["replicas"] == 50 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        let all = pods(&store).await;
        assert_eq!(all.len(), 50, "exactly 50, none twice");
        assert!(
            all.iter()
                .all(|p| p["metadata"]["ownerReferences"][0]["name"] == "web")
        );
        assert!(
            all.iter().all(|p| p["spec"]["nodeName"] == NODE),
            "bound to the node by admission"
        );
        assert_eq!(rs(&store).await["status"]["replicas"], 50);
        let restarts = registry
            .tree(0, 100)
            .actors
            .into_iter()
            .find(|a| a.kind == "replicaset-controller")
            .map(|a| a.mailbox.restarts);
        assert_eq!(
            restarts,
            Some(1),
            "the controller crashed once and was restarted"
        );
    });
}

#[test]
fn a_node_that_refuses_pods_shows_replica_failure_and_backs_off() {
    paused_system().block_on(async {
        let Setup { store, registry } = setup("refused");
        node(&store, 5).await;
        create_rs(&store, 8).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let after_half = summary(&registry)["failed_syncs"].as_u64().unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(pods(&store).await.len(), 5, "the node takes five");
        let status = rs(&store).await["status"].clone();
        let c = &status["conditions"][0];
        assert_eq!(
            (c["type"].as_str(), c["reason"].as_str()),
            (Some("ReplicaFailure"), Some("FailedCreate"))
        );
        assert!(
            c["message"].as_str().unwrap_or("").contains("OutOfpods"),
            "{c}"
        );
        // A minute of retries: 5 ms doubling, so about 14, never a hot loop.
        let failed = summary(&registry)["failed_syncs"].as_u64().unwrap();
        assert!(
            (8..=20).contains(&failed),
            "{failed} failed syncs in a minute"
        );
        // The second half-minute holds one or two of them (a fixed period would not).
        assert!(
            failed - after_half <= 2,
            "{after_half} then {failed}: the retries slow down"
        );
        // Fewer replicas: the failure clears.
        let mut v = rs(&store).await;
        v["spec"]["replicas"] = 5.into();
        sets(&store).replace(&PP, typed(v)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(rs(&store).await["status"].get("conditions").is_none());
    });
}

#[test]
fn a_matching_orphan_on_this_node_is_adopted_and_counts() {
    paused_system().block_on(async {
        let Setup { store, .. } = setup("adopt");
        node(&store, 110).await;
        let orphan = json!({"metadata": {"name": "bare", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "localhost/x:1"}]}});
        pods_api(&store).create(&PP, typed(orphan)).await.unwrap();
        // Matching too, but stored for another node: it never runs here.
        let elsewhere = json!({"metadata": {"name": "elsewhere", "labels": {"app": "web"}},
            "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "localhost/x:1"}]}});
        pods_api(&store)
            .create(&PP, typed(elsewhere))
            .await
            .unwrap();
        create_rs(&store, 2).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        let all = pods(&store).await;
        let other = all
            .iter()
            .find(|p| p["metadata"]["name"] == "elsewhere")
            .unwrap();
        assert!(
            other["metadata"].get("ownerReferences").is_none(),
            "another node's pod is not adopted"
        );
        let here: Vec<_> = all
            .iter()
            .filter(|p| p["spec"]["nodeName"] == NODE)
            .collect();
        assert_eq!(here.len(), 2, "the orphan plus one new pod on this node");
        let bare = here
            .iter()
            .find(|p| p["metadata"]["name"] == "bare")
            .unwrap();
        let owner = &bare["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["name"].as_str(), owner["controller"].as_bool()),
            (Some("web"), Some(true))
        );
    });
}
