//! The uplink against two real stores, one standing in for the cluster. A cluster's Node
//! authorizer lets a node read only the pods its graph binds to the node, and an informer
//! feeds that graph: for a moment after a pod is made bound, reading it is Forbidden.
//! The node's status must still go up (the kubelet's status manager retries any failed
//! read but NotFound); before, the uplink took that Forbidden for "gone" and never wrote
//! the status, so a pod the node failed at once stayed Pending in the cluster for ever.
//! A pod the node has finished and the cluster no longer has is Forbidden for good, and
//! costs nothing once that is known.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::ChildSpec;
use podvisor_actors::testing::paused_system;
use podvisor_client::{Api, Client, DeleteParams, Error, Patch, PostParams, Target};
use podvisor_machinery::backoff;
use podvisor_node::cluster::ClusterUplink;
use serde_json::json;
use support::{Call, Faulty, store};

fn forbidden(t: &Target<'_>) -> Error {
    Error::Forbidden {
        resource: "pods".into(),
        name: t.name.into(),
        cause: String::new(),
        message: "no relationship found between node 'n1' and this object".into(),
    }
}

/// The cluster's API as the node sees it: pod reads Forbidden while `refuse` says so;
/// and how many pod reads it was asked.
fn cluster_api(
    store: podvisor_store::LocalClient,
    refuse: impl Fn(usize) -> bool + Send + Sync + 'static,
) -> (Client, Arc<AtomicUsize>) {
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    let fault = move |call: Call, t: &Target<'_>| {
        let read = call == Call::Get && t.namespace.is_some();
        (read && refuse(counted.fetch_add(1, Ordering::SeqCst))).then(|| forbidden(t))
    };
    let client = Client::new(Faulty {
        store,
        fault: Box::new(fault),
    });
    (client, gets)
}

fn bound_pod(deleting: bool) -> Pod {
    let mut meta = json!({"name": "p", "namespace": "default", "uid": "u-p"});
    if deleting {
        meta["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        meta["deletionGracePeriodSeconds"] = json!(30);
    }
    let phase = if deleting { "Succeeded" } else { "Pending" };
    serde_json::from_value(json!({"metadata": meta, "status": {"phase": phase},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap()
}

#[test]
fn a_status_goes_up_though_the_cluster_first_forbids_reading_the_pod() {
    paused_system().block_on(async {
        let in_cluster = store("uplink-cluster");
        let (cluster, gets) = cluster_api(in_cluster.clone(), |n| n < 2);
        let cluster_pods: Api<Pod> = Api::namespaced(Client::new(in_cluster), "default");
        let made = cluster_pods
            .create(&PostParams::default(), bound_pod(false))
            .await
            .unwrap();
        let local = Client::new(store("uplink-local"));
        Api::<Pod>::all(local.clone())
            .replicate((*made).clone())
            .await
            .unwrap();
        let failed = json!({"status": {"phase": "Failed", "reason": "OutOfcpu"}});
        Api::<Pod>::namespaced(local.clone(), "default")
            .patch_status("p", &PostParams::default(), &Patch::Merge(failed))
            .await
            .unwrap();

        let _uplink =
            ChildSpec::of(move || ClusterUplink::new("n1", local.clone(), cluster.clone()))
                .start_unsupervised();
        let mut seen = None;
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let status = cluster_pods.get("p").await.unwrap().status.clone();
            seen = status.map(|s| (s.phase, s.reason));
            if seen
                .as_ref()
                .is_some_and(|s| s.0.as_deref() == Some("Failed"))
            {
                break;
            }
        }
        let want = (Some("Failed".to_string()), Some("OutOfcpu".to_string()));
        assert_eq!(seen, Some(want), "the node's status in the cluster");
        assert!(
            gets.load(Ordering::SeqCst) >= 3,
            "read again after the refusals"
        );
    });
}

#[test]
fn a_finished_pod_the_cluster_no_longer_has_is_not_retried() {
    paused_system().block_on(async {
        let (cluster, gets) = cluster_api(store("uplink-gone-cluster"), |_| true);
        let local = Client::new(store("uplink-gone-local"));
        let copy = Api::<Pod>::all(local.clone())
            .replicate(bound_pod(true))
            .await
            .unwrap()
            .unwrap();
        let uplink_local = local.clone();
        let _uplink =
            ChildSpec::of(move || ClusterUplink::new("n1", uplink_local.clone(), cluster.clone()))
                .start_unsupervised();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let uid = copy.metadata.uid.clone().unwrap();
        Api::<Pod>::namespaced(local, "default")
            .delete("p", &DeleteParams::now_if_uid(&uid))
            .await
            .unwrap();
        // The live copy's refusals left a backoff running (up to 30 s, jittered): the
        // final status waits it out, then is tried once.
        tokio::time::sleep(backoff::MAX + Duration::from_secs(5)).await;
        let settled = gets.load(Ordering::SeqCst);
        assert!(settled > 0, "the final status was tried");
        tokio::time::sleep(backoff::MAX * 3).await;
        assert_eq!(
            gets.load(Ordering::SeqCst),
            settled,
            "the cluster was read again for a pod it no longer has"
        );
    });
}

/// The node finished a pod the cluster was deleting and removed it from its store; its
/// uplink restarted before the cluster's delete went up. Rebuilt from the store, which no
/// longer has the pod, the uplink would never remove it, and the pod would stay
/// Terminating in the cluster: it looks in the cluster too. A pod the node still holds
/// is left to its copy's own course.
#[test]
fn a_pod_the_node_removed_before_the_uplink_restarted_is_removed_from_the_cluster() {
    paused_system().block_on(async {
        let cluster = Client::new(store("uplink-orphan-cluster"));
        let local = Client::new(store("uplink-orphan-local"));
        let cluster_pods: Api<Pod> = Api::namespaced(cluster.clone(), "default");
        for (name, uid) in [("p", "u-p"), ("q", "u-q")] {
            let mut pod = bound_pod(false);
            pod.metadata.name = Some(name.into());
            pod.metadata.uid = Some(uid.into());
            let made = cluster_pods
                .create(&PostParams::default(), pod)
                .await
                .unwrap();
            if name == "q" {
                // The node holds `q` (its copy from before the deletion).
                Api::<Pod>::all(local.clone())
                    .replicate((*made).clone())
                    .await
                    .unwrap();
            }
            let graceful = DeleteParams {
                grace_seconds: Some(30),
                ..DeleteParams::default()
            };
            cluster_pods.delete(name, &graceful).await.unwrap();
            let done = Patch::Merge(json!({"status": {"phase": "Succeeded"}}));
            cluster_pods
                .patch_status(name, &PostParams::default(), &done)
                .await
                .unwrap();
        }
        let c = cluster.clone();
        let _uplink = ChildSpec::of(move || ClusterUplink::new("n1", local.clone(), c.clone()))
            .start_unsupervised();
        let mut gone = false;
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if cluster_pods.get_opt("p").await.unwrap().is_none() {
                gone = true;
                break;
            }
        }
        assert!(gone, "the pod the node removed stayed in the cluster");
        let q = cluster_pods.get_opt("q").await.unwrap();
        assert!(q.is_some(), "the pod the node holds was removed");
    });
}
