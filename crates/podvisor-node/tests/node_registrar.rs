//! The node registrar against a real store: Ready follows the agent's health, and the
//! debug summary shows what was written as soon as it is (before, the summary was
//! published before the write finished and stayed a period behind: an operator saw a
//! Ready node as not ready).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use podvisor_actors::testing::paused_system;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_client::Api;
use podvisor_node::node::{NodeFacts, NodeRegistrar, Unhealthy};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};
use serde_json::Value;

fn facts() -> NodeFacts {
    NodeFacts {
        kubelet_port: 10250,
        name: "n1".into(),
        address: "192.0.2.7".into(),
        cpu_milli: 2000,
        memory_bytes: 1 << 30,
        pods: 110,
        allocatable_cpu_milli: 2000,
        allocatable_memory_bytes: 1 << 30,
        ephemeral_storage_bytes: 10 << 30,
        allocatable_ephemeral_storage_bytes: 9 << 30,
        runtime_version: "containerd://test".into(),
        agent_version: "test".into(),
        taints: Vec::new(),
        labels: [("example.com/rack".to_string(), "r1".to_string())].into(),
    }
}

async fn stored_ready(nodes: &Api<Node>) -> Option<String> {
    let node = nodes.get("n1").await.ok()?;
    let conds = node.status.as_ref()?.conditions.as_ref()?;
    conds
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

fn summary_ready(registry: &Registry) -> Option<Value> {
    registry.get("node-registrar")?.state?.get("ready").cloned()
}

#[test]
fn ready_follows_health_and_the_summary_shows_it_at_once() {
    paused_system().block_on(async {
        let dir = std::env::temp_dir().join(format!("podvisor-registrar-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = StoreConfig {
            path: dir.join("s.redb"),
            window: 100,
        };
        let healthy = Arc::new(AtomicBool::new(false));
        let h = healthy.clone();
        let health = Arc::new(move || {
            if h.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(Unhealthy("PLEG has not relisted yet".to_string()))
            }
        });
        let (store, store_spec) = ChildSpec::of(move || StoreActor::new(cfg.clone(), 64)).build();
        let client = LocalClient::client(&store);
        let nodes: Api<Node> = Api::all(client.clone());
        let (_, node_spec) =
            ChildSpec::of(move || NodeRegistrar::new(facts(), health.clone(), client.clone()))
                .build();
        let registry = Registry::new();
        start_root(
            "root",
            SupervisorConfig::default(),
            registry.clone(),
            vec![store_spec, node_spec],
            |e| panic!("escalated: {e:?}"),
        );
        for (step, want) in [(0, "False"), (1, "True")] {
            if step == 1 {
                healthy.store(true, Ordering::SeqCst);
            }
            let mut written = false;
            for _ in 0..200 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if stored_ready(&nodes).await.as_deref() == Some(want) {
                    written = true;
                    break;
                }
            }
            assert!(written, "the Node's Ready never became {want}");
            // The write's answer is a message to the registrar: a few turns of the
            // runtime, not a period of 10 s.
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert_eq!(summary_ready(&registry), Some(Value::from(want)));
        }
        let labels = nodes
            .get("n1")
            .await
            .unwrap()
            .metadata
            .labels
            .clone()
            .unwrap();
        assert_eq!(
            labels.get("example.com/rack").map(String::as_str),
            Some("r1")
        );
        assert_eq!(
            labels.get("kubernetes.io/hostname").map(String::as_str),
            Some("n1")
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}
