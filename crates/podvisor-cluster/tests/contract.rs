//! The client contract (`podvisor_client::contract`) against a real kube-apiserver: the
//! one scripts/cluster-up starts (scripts/test starts it and names its admin kubeconfig in
//! PODVISOR_TEST_CLUSTER_KUBECONFIG). The node's own store passes the same suite
//! (podvisor-store's tests), so a consumer written against one works against the other.

use std::path::PathBuf;

use podvisor_client::Client;
use podvisor_cluster::RemoteClient;

fn admin_kubeconfig() -> PathBuf {
    std::env::var_os("PODVISOR_TEST_CLUSTER_KUBECONFIG")
        .map(PathBuf::from)
        .expect(
            "PODVISOR_TEST_CLUSTER_KUBECONFIG must name the admin kubeconfig of a running \
             scripts/cluster-up (scripts/test sets it)",
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_apiserver_keeps_the_client_contract() {
    let remote = RemoteClient::from_kubeconfig(&admin_kubeconfig())
        .await
        .expect("a client of the test cluster");
    podvisor_client::contract::run_all(&Client::new(remote)).await;
}
