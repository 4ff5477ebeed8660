//! The status writer against a real store: a terminated pod marked for deletion is removed
//! from the store even when the store fails the first attempts (before, one failed write
//! left the pod Terminating in the API for ever).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::ChildSpec;
use podvisor_actors::testing::{paused_system, start_collector};
use podvisor_client::{
    AnyObject, Api, Backend, Client, DeleteParams, Deleted, Error, ListParams, ObjectList, Patch,
    PostParams, Result, Scope, Subresource, Target, WatchStream,
};
use podvisor_kubelet::protocol::status::PublishedStatus;
use podvisor_machinery::events::RecordEvent;
use podvisor_node::status::StatusWriter;
use podvisor_store::{LocalClient, StoreActor, StoreConfig};
use serde_json::json;

/// The store, but for the first `failures` deletes, which fail.
struct FlakyDelete {
    store: LocalClient,
    failures: usize,
    attempts: Arc<AtomicUsize>,
}

#[async_trait]
impl Backend for FlakyDelete {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject> {
        self.store.get(t).await
    }
    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>> {
        self.store.list(s, lp).await
    }
    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        v: &str,
    ) -> Result<WatchStream<AnyObject>> {
        self.store.watch(s, lp, v).await
    }
    async fn create(&self, o: AnyObject, pp: &PostParams) -> Result<AnyObject> {
        self.store.create(o, pp).await
    }
    async fn replace(&self, o: AnyObject, sub: Subresource, pp: &PostParams) -> Result<AnyObject> {
        self.store.replace(o, sub, pp).await
    }
    async fn patch(
        &self,
        t: Target<'_>,
        sub: Subresource,
        p: &Patch,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        self.store.patch(t, sub, p, pp).await
    }
    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) < self.failures {
            return Err(Error::Internal("injected failure".into()));
        }
        self.store.delete(t, dp).await
    }
}

#[test]
fn a_failed_removal_is_retried_until_the_pod_is_gone() {
    paused_system().block_on(async {
        let dir = std::env::temp_dir().join(format!("podvisor-writer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = StoreConfig {
            path: dir.join("s.redb"),
            window: 100,
        };
        let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 64)).start_unsupervised();
        let pods: Api<Pod> = Api::namespaced(LocalClient::client(&store), "default");
        let body: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}))
        .unwrap();
        let created = pods.create(&PostParams::default(), body).await.unwrap();
        let marked = pods.delete("p", &DeleteParams::default()).await.unwrap();
        assert!(
            matches!(marked, Deleted::Marked(_)),
            "a bound pod is deleted gracefully"
        );

        let attempts = Arc::new(AtomicUsize::new(0));
        let flaky = Client::new(FlakyDelete {
            store: LocalClient::new(store.clone()),
            failures: 3,
            attempts: attempts.clone(),
        });
        let (events, _) = start_collector::<RecordEvent>();
        let writer = ChildSpec::of(move || StatusWriter::new("n1", flaky.clone(), events.clone()))
            .start_unsupervised();
        let mut pod = (*created).clone();
        pod.status.get_or_insert_default().phase = Some("Succeeded".into());
        writer
            .send(PublishedStatus::Changed {
                pod: Arc::new(pod),
                terminated: true,
            })
            .await
            .unwrap();

        let mut gone = false;
        for _ in 0..200 {
            if pods.get_opt("p").await.unwrap().is_none() {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(gone, "the terminated pod was removed from the store");
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            4,
            "three failures, then the removal"
        );
    });
}
