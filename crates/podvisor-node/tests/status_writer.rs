//! The status writer against a real store: a terminated pod marked for deletion is removed
//! from the store even when the store fails the first attempts (before, one failed write
//! left the pod Terminating in the API for ever).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::ChildSpec;
use podvisor_actors::testing::{paused_system, start_collector};
use podvisor_client::{Api, Client, DeleteParams, Deleted, Error, PostParams};
use podvisor_kubelet::protocol::status::PublishedStatus;
use podvisor_machinery::events::RecordEvent;
use podvisor_node::status::StatusWriter;
use serde_json::json;
use support::{Call, Faulty, store};

#[test]
fn a_failed_removal_is_retried_until_the_pod_is_gone() {
    paused_system().block_on(async {
        let store = store("writer");
        let pods: Api<Pod> = Api::namespaced(Client::new(store.clone()), "default");
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
        let counted = attempts.clone();
        let flaky = Client::new(Faulty {
            store,
            fault: Box::new(move |call, _| {
                let failing = call == Call::Delete && counted.fetch_add(1, Ordering::SeqCst) < 3;
                failing.then(|| Error::Internal("injected failure".into()))
            }),
        });
        let (events, _) = start_collector::<RecordEvent>();
        let writer = ChildSpec::of(move || StatusWriter::new("n1", flaky.clone(), events.clone()))
            .start_unsupervised();
        let status = k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        };
        writer
            .send(PublishedStatus::Changed {
                pod: created.clone(),
                status: Arc::new(status),
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
