//! How many times a status write decodes the pod, against a real store with five
//! watchers (as many as watch pods in a standalone agent): the count is of this thread's
//! decodes (`podvisor_client::decodes_on_this_thread`), and the store, its watchers and
//! the writer all run on the test's one thread.
//!
//! Before the shared decodes (issue 46): 10 per write, 4 before the commit (the writer's
//! read, the stored JSON as a value, the patched value typed, the stored JSON typed again
//! for the update) and 6 after it (each watcher's, and the writer's answer).

use std::sync::Arc;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podvisor_actors::testing::paused_system;
use podvisor_client::{Api, Client, ListParams, PostParams, WatchEvent, decodes_on_this_thread};
use serde_json::json;
use tokio::sync::mpsc;

use super::write::{ToWrite, Written, write};

const WATCHERS: usize = 5;

fn running(p: &Arc<Pod>, ready: &str) -> ToWrite {
    let status = serde_json::from_value(json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": ready}],
        "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": true,
            "restartCount": 0, "state": {"running": {"startedAt": "2026-11-29T10:00:00Z"}}}]}))
    .unwrap();
    ToWrite {
        pod: p.clone(),
        status: Arc::new(status),
        terminated: false,
    }
}

/// Watchers that report each change they decode.
async fn watchers(api: &Api<Pod>, version: &str) -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    for _ in 0..WATCHERS {
        let mut stream = api.watch(&ListParams::default(), version).await.unwrap();
        let tx = tx.clone();
        actix::spawn(async move {
            while let Some(Ok(e)) = stream.next().await {
                if matches!(e, WatchEvent::Modified(_)) {
                    let _ = tx.send(());
                }
            }
        });
    }
    rx
}

/// A real store of its own (named after `tag`) holding one pod, `p` in `default`.
async fn pod_in_store(tag: &str) -> (Client, Api<Pod>, Arc<Pod>) {
    let client = super::write::tests::store_client(tag);
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let body: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap();
    let pod = api.create(&PostParams::default(), body).await.unwrap();
    (client, api, pod)
}

/// Decodes of one write, its watchers' included.
async fn counted(
    clients: &(Client, Client),
    to_write: &ToWrite,
    base: Option<Arc<PodStatus>>,
    seen: &mut mpsc::UnboundedReceiver<()>,
) -> (u64, Written) {
    let before = decodes_on_this_thread();
    let written = write(clients, to_write, base).await.ok().unwrap();
    for _ in 0..WATCHERS {
        seen.recv().await.unwrap();
    }
    (decodes_on_this_thread() - before, written)
}

#[test]
fn a_status_write_decodes_the_pod_three_times_with_five_watchers() {
    paused_system().block_on(async {
        let (client, api, pod) = pod_in_store("decodes").await;
        let version = pod.metadata.resource_version.clone().unwrap();
        let mut seen = watchers(&api, &version).await;
        let clients = (client.clone(), client);

        // The first write after a start reads the pod first: one decode more.
        let (first, written) = counted(&clients, &running(&pod, "False"), None, &mut seen).await;
        assert!(written.base.is_some());
        assert_eq!(first, 4, "the first write's decodes");
        // Later ones patch from what the last one left: two before the commit (the stored
        // pod typed, the patched pod typed), one after it for every watcher and the writer.
        let (next, _) = counted(&clients, &running(&pod, "True"), written.base, &mut seen).await;
        assert_eq!(next, 3, "a later write's decodes");
        let stored = api.get("p").await.unwrap();
        let ready = &stored.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!(ready.status, "True");
    });
}

/// The base `to_write`'s write leaves.
async fn base_after(
    clients: &(Client, Client),
    to_write: &ToWrite,
    base: Option<Arc<PodStatus>>,
) -> Arc<PodStatus> {
    let written = write(clients, to_write, base).await.ok().unwrap();
    written.base.unwrap()
}

/// The base a write leaves is the status manager's own `Arc` while the API holds just what
/// the node wrote, and a copy of the API's once another writer's condition is beside it
/// (the next patch must keep that condition).
#[test]
fn the_base_a_write_leaves_is_the_status_written_not_a_copy() {
    paused_system().block_on(async {
        let (client, api, pod) = pod_in_store("base-shared").await;
        let clients = (client.clone(), client);

        let first = running(&pod, "False");
        let read = base_after(&clients, &first, None).await;
        assert!(
            Arc::ptr_eq(&read, &first.status),
            "after a read and a write"
        );
        let next = running(&pod, "True");
        let patched = base_after(&clients, &next, Some(read)).await;
        assert!(
            Arc::ptr_eq(&patched, &next.status),
            "after a patch from the base"
        );

        let other =
            json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}});
        let other = podvisor_client::Patch::Strategic(other);
        api.patch_status("p", &PostParams::default(), &other)
            .await
            .unwrap();
        let third = running(&pod, "False");
        let kept = base_after(&clients, &third, None).await;
        assert!(!Arc::ptr_eq(&kept, &third.status));
        let types: Vec<_> = kept
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, ["Ready", "DisruptionTarget"]);
    });
}

/// A watcher of the store decodes the node's write back equal to the status published, so
/// the uplink keeps the published copy (`shared.rs`) and no third.
#[test]
fn a_watcher_s_decode_of_a_write_is_the_published_status() {
    paused_system().block_on(async {
        let (client, api, pod) = pod_in_store("shared").await;
        let version = pod.metadata.resource_version.clone().unwrap();
        let mut stream = api.watch(&ListParams::default(), &version).await.unwrap();
        let shared = super::shared::SharedStatuses::default();
        let to_write = running(&pod, "True");
        let uid = pod.metadata.uid.clone().unwrap();
        shared.publish(&uid.as_str().into(), &to_write.status);

        write(&(client.clone(), client), &to_write, None)
            .await
            .ok()
            .unwrap();

        let Some(Ok(WatchEvent::Modified(seen))) = stream.next().await else {
            panic!("the write's change")
        };
        let kept = shared.same(&uid, seen.status.as_ref().unwrap());
        assert!(kept.is_some_and(|k| Arc::ptr_eq(&k, &to_write.status)));
    });
}
