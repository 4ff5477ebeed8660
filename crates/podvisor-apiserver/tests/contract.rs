//! The client contract (`podvisor_client::contract`), kept by the node's store with the
//! admission the agent runs it with (object admission, node fit, Pod Security).

use std::sync::Arc;

use podvisor_actors::ChildSpec;
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::pod_security::{Level, PodSecurity};
use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_store::{Admission, LocalClient, StoreActor, StoreConfig};

#[actix_rt::test]
async fn the_agents_store_keeps_the_client_contract() {
    let dir = std::env::temp_dir().join(format!("podvisor-api-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let node = NodeInfo {
        node_name: "n1".into(),
    };
    let admission: Vec<Arc<dyn Admission>> = vec![
        Arc::new(ObjectAdmission::new(node)),
        Arc::new(NodeFit::new("n1")),
        Arc::new(PodSecurity::new(Level::Baseline)),
    ];
    let store =
        ChildSpec::of(move || StoreActor::new(cfg.clone(), 64).with_admission(admission.clone()))
            .start_unsupervised();
    podvisor_client::contract::run_all(&LocalClient::client(&store)).await;
    let _ = std::fs::remove_dir_all(&dir);
}
