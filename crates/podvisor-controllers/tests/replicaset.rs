//! The ReplicaSet controller against a real store with the API's admission (no kubelet: the
//! pods it makes are only stored): a panic injected in the middle of a slow-start scale-up
//! to 50 ends with exactly 50 pods; a node that refuses pods (OutOfpods) gives the
//! ReplicaFailure condition and retries with backoff, not in a hot loop; orphans are adopted.

use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::testing::paused_system;
use podvisor_actors::{ActorRef, ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_controllers::replicaset::{self, ReplicaSetController};
use podvisor_core::Kind;
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_machinery::reflector::Source;
use podvisor_store::actor::{Create, Get, List, Update, Watch, WatchEvent};
use podvisor_store::{
    Admission, ChangeType, Resource, Selector, StoreActor, StoreConfig, WriteOptions,
};
use serde_json::{Value, json};

const NODE: &str = "n1";

struct Setup {
    store: ActorRef<StoreActor>,
    registry: Arc<Registry>,
}

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
    let s = store.clone();
    let reporter = Reporter {
        component: "replicaset-controller".into(),
        host: NODE.into(),
    };
    let (events, events_spec) =
        ChildSpec::of(move || EventRecorder::new(reporter.clone(), s.recipient(), s.recipient()))
            .build();
    let s = store.clone();
    let (_, rs_spec) = ChildSpec::of(move || {
        let source = Source::of(&s);
        let handles = replicaset::StoreHandles::of(&s);
        ReplicaSetController::new(NODE, source, handles, events.recipient())
    })
    .capacity(1 << 14)
    .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![store_spec, events_spec, rs_spec],
        |e| panic!("escalated: {e:?}"),
    );
    Setup { store, registry }
}

async fn node(store: &ActorRef<StoreActor>, pods: u32) {
    let nodes = Resource::of(Kind::Node);
    let body = json!({"metadata": {"name": NODE}, "spec": {}});
    store
        .send(Create {
            resource: nodes,
            namespace: None,
            body,
            opts: WriteOptions::default(),
        })
        .await
        .unwrap()
        .unwrap();
    let get = Get {
        kind: Kind::Node,
        namespace: String::new(),
        name: NODE.into(),
    };
    let mut v = store.send(get).await.unwrap().unwrap().value();
    v["status"] = json!({"allocatable": {"pods": pods.to_string(), "cpu": "64", "memory": "64Gi"}});
    let update = Update {
        resource: nodes,
        body: v,
        status_only: true,
        opts: WriteOptions::default(),
    };
    store.send(update).await.unwrap().unwrap();
}

async fn create_rs(store: &ActorRef<StoreActor>, replicas: i32) {
    let body = json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "localhost/x:1"}]}}}});
    let msg = Create {
        resource: Resource::of(Kind::ReplicaSet),
        namespace: Some("default".into()),
        body,
        opts: WriteOptions::default(),
    };
    store.send(msg).await.unwrap().unwrap();
}

async fn pods(store: &ActorRef<StoreActor>) -> Vec<Value> {
    let msg = List {
        selector: Selector::all(Kind::Pod),
        limit: None,
        continue_token: None,
    };
    let page = store.send(msg).await.unwrap().unwrap();
    page.items.iter().map(|o| o.value()).collect()
}

async fn rs(store: &ActorRef<StoreActor>) -> Value {
    let get = Get {
        kind: Kind::ReplicaSet,
        namespace: "default".into(),
        name: "web".into(),
    };
    store.send(get).await.unwrap().unwrap().value()
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
        let mut sel = Selector::all(Kind::Pod);
        sel.namespace = Some("default".into());
        let mut watch = store
            .send(Watch {
                selector: sel,
                from: None,
            })
            .await
            .unwrap()
            .unwrap();
        create_rs(&store, 50).await;
        // Crash the controller as soon as its third pod is stored: batches 1 and 2 are done,
        // batch 3 is under way.
        let mut n = 0;
        while n < 3 {
            if let Some(WatchEvent::Change(c)) = watch.recv().await
                && c.kind == ChangeType::Added
            {
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
        let update = Update {
            resource: Resource::of(Kind::ReplicaSet),
            body: v,
            status_only: false,
            opts: WriteOptions::default(),
        };
        store.send(update).await.unwrap().unwrap();
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
        let msg = Create {
            resource: Resource::of(Kind::Pod),
            namespace: Some("default".into()),
            body: orphan,
            opts: WriteOptions::default(),
        };
        store.send(msg).await.unwrap().unwrap();
        // Matching too, but stored for another node: it never runs here.
        let elsewhere = json!({"metadata": {"name": "elsewhere", "labels": {"app": "web"}},
            "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "localhost/x:1"}]}});
        let msg = Create {
            resource: Resource::of(Kind::Pod),
            namespace: Some("default".into()),
            body: elsewhere,
            opts: WriteOptions::default(),
        };
        store.send(msg).await.unwrap().unwrap();
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
