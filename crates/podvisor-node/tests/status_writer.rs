//! The status writer against a real store: a terminated pod marked for deletion is removed
//! from the store even when the store fails the first attempts (before, one failed write
//! left the pod Terminating in the API for ever).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::testing::{paused_system, start_collector};
use podvisor_actors::{ActorRef, ChildSpec, StartInfo, SupervisedActor};
use podvisor_core::Kind;
use podvisor_kubelet::protocol::status::PublishedStatus;
use podvisor_machinery::events::RecordEvent;
use podvisor_node::status::{StatusWriter, StoreHandles};
use podvisor_store::actor::{Create, Delete, Deleted, Get};
use podvisor_store::{DeleteOptions, Resource, StoreActor, StoreConfig, StoreError, WriteOptions};
use serde_json::json;

/// Fails the first `failures` deletes, then passes them to the store.
struct FlakyDelete {
    store: ActorRef<StoreActor>,
    failures: usize,
    attempts: Arc<AtomicUsize>,
}

impl Actor for FlakyDelete {
    type Context = Context<Self>;
}

impl SupervisedActor for FlakyDelete {
    const KIND: &'static str = "flaky-delete";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

impl Handler<Delete> for FlakyDelete {
    type Result = ResponseFuture<Result<Deleted, StoreError>>;
    fn handle(&mut self, m: Delete, _: &mut Context<Self>) -> Self::Result {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst);
        if n < self.failures {
            return Box::pin(async { Err(StoreError::Db("injected failure".into())) });
        }
        let store = self.store.clone();
        Box::pin(async move {
            store
                .send(m)
                .await
                .map_err(|e| StoreError::Db(e.to_string()))?
        })
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
        let body = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1",
            "containers": [{"name": "c", "image": "busybox"}]}});
        let created = store
            .send(Create {
                resource: Resource::of(Kind::Pod),
                namespace: Some("default".into()),
                body,
                opts: WriteOptions::default(),
            })
            .await
            .unwrap()
            .unwrap();
        let marked = store
            .send(Delete {
                resource: Resource::of(Kind::Pod),
                namespace: "default".into(),
                name: "p".into(),
                opts: DeleteOptions::default(),
            })
            .await
            .unwrap()
            .unwrap();
        assert!(
            matches!(marked, Deleted::Marked(_)),
            "a bound pod is deleted gracefully"
        );

        let attempts = Arc::new(AtomicUsize::new(0));
        let (s, a) = (store.clone(), attempts.clone());
        let flaky = ChildSpec::of(move || FlakyDelete {
            store: s.clone(),
            failures: 3,
            attempts: a.clone(),
        })
        .start_unsupervised();
        let (events, _) = start_collector::<RecordEvent>();
        let handles = StoreHandles::new(
            store.recipient(),
            store.recipient(),
            store.recipient(),
            flaky.recipient(),
        );
        let writer = ChildSpec::of(move || StatusWriter::new(handles.clone(), events.clone()))
            .start_unsupervised();
        let mut pod: Pod = created.typed().unwrap();
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
            let get = Get {
                kind: Kind::Pod,
                namespace: "default".into(),
                name: "p".into(),
            };
            if matches!(
                store.send(get).await.unwrap(),
                Err(StoreError::NotFound { .. })
            ) {
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
