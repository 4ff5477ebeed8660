//! The replica against two real stores, one standing in for the cluster. A copy the
//! node's store cannot write for a while (its actor restarting, its disk full) must not be
//! lost: before, the failed write was logged and dropped, and a pod bound in that moment
//! never ran until the cluster changed it again. Now a transient failure is tried again
//! and, when it lasts, restarts the replica, whose fresh list copies everything; a copy
//! refused for what it is stays refused, so one odd pod cannot keep the replica restarting.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::testing::paused_system;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_client::{Api, Client, DeleteParams, Error, Patch, PostParams};
use podvisor_node::cluster::ClusterReplica;
use serde_json::json;
use support::{Call, Faulty, store};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap()
}

/// The cluster, with the Node `n1` and the pods `names` bound to it.
async fn cluster(names: &[&str]) -> Client {
    let client = Client::new(store(&format!("replica-cluster-{}", names.join("-"))));
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    let pp = PostParams::default();
    Api::<Node>::all(client.clone())
        .create(&pp, node)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for name in names {
        pods.create(&pp, pod(name)).await.unwrap();
    }
    client
}

/// Runs the replica under a supervisor, its store failing writes of pods as `fault`
/// says (given the pod's name and how many writes of it came before); answers the
/// store, and how many writes of each pod were tried.
fn replica(
    cluster: Client,
    name: &str,
    fault: impl Fn(&str, usize) -> Option<Error> + Send + Sync + 'static,
) -> (Client, Arc<Mutex<Vec<String>>>) {
    let local = store(name);
    let tried = Arc::new(Mutex::new(Vec::new()));
    let seen = tried.clone();
    let faulty = Client::new(Faulty {
        store: local.clone(),
        fault: Box::new(move |call, t| {
            if call != Call::Replicate || t.kind != podvisor_core::Kind::Pod {
                return None;
            }
            let mut seen = seen.lock().unwrap();
            let before = seen.iter().filter(|n| *n == t.name).count();
            seen.push(t.name.to_string());
            fault(t.name, before)
        }),
    });
    let spec = ChildSpec::of(move || ClusterReplica::new("n1", cluster.clone(), faulty.clone()))
        .key("replica")
        .build()
        .1;
    let registry = Registry::new();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry,
        vec![spec],
        |_| {},
    );
    (Client::new(local), tried)
}

async fn copied(local: &Client, name: &str) -> bool {
    let pods: Api<Pod> = Api::namespaced(local.clone(), "default");
    pods.get_opt(name).await.unwrap().is_some()
}

#[test]
fn a_copy_the_store_fails_to_write_for_a_while_is_made_once_it_can() {
    paused_system().block_on(async {
        // Longer than the tries of one copy: the replica starts over.
        let cluster = cluster(&["web"]).await;
        let unavailable =
            |_: &str, before| (before < 7).then(|| Error::Unavailable("the disk is full".into()));
        let (local, tried) = replica(cluster, "replica-transient", unavailable);
        let mut made = false;
        for _ in 0..120 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if copied(&local, "web").await {
                made = true;
                break;
            }
        }
        let tries = tried.lock().unwrap().len();
        assert!(made, "the pod was never copied ({tries} writes tried)");
        assert_eq!(tries, 8, "5 tries, a restart, 3 more");
    });
}

#[test]
fn a_copy_refused_for_what_it_is_does_not_restart_the_replica() {
    paused_system().block_on(async {
        let cluster = cluster(&["odd", "web"]).await;
        let refused = |name: &str, _| {
            (name == "odd").then(|| Error::BadRequest("a copy this store will not take".into()))
        };
        let (local, tried) = replica(cluster, "replica-refused", refused);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(copied(&local, "web").await, "the other pod was copied");
        let odd = tried.lock().unwrap().iter().filter(|n| *n == "odd").count();
        assert_eq!(
            odd, 1,
            "the refused copy was tried again (a restart relisted it)"
        );
    });
}

/// The node finished a pod the cluster was deleting and removed it from its store; the
/// uplink's final status then reaches the cluster as a change before the cluster's
/// delete does. Copying that change would add the pod again (a second admission, pod
/// worker and removal for nothing, in every delete of a burst): it is not copied. A copy
/// the node still holds takes the same change.
#[test]
fn the_final_status_of_a_pod_the_node_finished_and_removed_is_not_copied_back() {
    paused_system().block_on(async {
        let cluster = cluster(&["web", "job"]).await;
        let (local, tried) = replica(cluster.clone(), "replica-finished", |_, _| None);
        let in_cluster: Api<Pod> = Api::namespaced(cluster, "default");
        let here: Api<Pod> = Api::namespaced(local.clone(), "default");
        for name in ["web", "job"] {
            settle_until(|| copied(&local, name)).await;
            let graceful = DeleteParams {
                grace_seconds: Some(30),
                ..DeleteParams::default()
            };
            in_cluster.delete(name, &graceful).await.unwrap();
            settle_until(|| async { deleting(&here.get(name).await.unwrap()) }).await;
        }
        // The node finished `web` and removed it; it still holds `job`.
        let uid = here.get("web").await.unwrap().metadata.uid.clone().unwrap();
        here.delete("web", &DeleteParams::now_if_uid(&uid))
            .await
            .unwrap();
        let writes_before = tried.lock().unwrap().len();
        for name in ["web", "job"] {
            let patch = Patch::Merge(json!({"status": {"phase": "Succeeded"}}));
            in_cluster
                .patch_status(name, &PostParams::default(), &patch)
                .await
                .unwrap();
        }
        settle_until(|| async { tried.lock().unwrap()[writes_before..].contains(&"job".into()) })
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            !copied(&local, "web").await,
            "the removed pod was added back"
        );
        let writes: Vec<_> = tried.lock().unwrap()[writes_before..].to_vec();
        assert_eq!(writes, ["job"], "only the held copy is written");
    });
}

async fn settle_until<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) {
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never settled");
}

fn deleting(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
}
