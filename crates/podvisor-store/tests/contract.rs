//! The client contract (`podvisor_client::contract`), kept by the store as a backend.

use podvisor_actors::ChildSpec;
use podvisor_store::{LocalClient, StoreActor, StoreConfig};

#[actix_rt::test]
async fn the_store_keeps_the_client_contract() {
    let dir = std::env::temp_dir().join(format!("podvisor-store-contract-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 64)).start_unsupervised();
    podvisor_client::contract::run_all(&LocalClient::client(&store)).await;
    let _ = std::fs::remove_dir_all(&dir);
}
