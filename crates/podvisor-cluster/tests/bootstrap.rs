//! TLS bootstrapping against the control plane of scripts/cluster-up (scripts/test names
//! its kubeconfigs): a node with only the bootstrap token ends with a certificate of its own
//! that the cluster takes as `system:node:<name>`, held to the Node authorizer and
//! NodeRestriction like the kubelet.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use podvisor_client::{Api, Client, Error, PostParams};
use podvisor_cluster::{RemoteClient, node_credentials};

fn env_path(var: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "{var} must name a kubeconfig of a running scripts/cluster-up (scripts/test sets it)"
        )
    })
}

fn node(name: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = Some(name.into());
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrapped_node_acts_as_itself_and_only_itself() {
    let bootstrap = env_path("PODVISOR_TEST_CLUSTER_BOOTSTRAP_KUBECONFIG");
    let name = format!("bootstrap-test-{}", std::process::id());
    let dir = std::env::temp_dir()
        .join("podvisor-bootstrap-test")
        .join(&name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let kubeconfig = node_credentials(&bootstrap, &name, &dir, (Duration::from_secs(30), None))
        .await
        .expect("credentials through an approved CSR");
    let mode = std::fs::metadata(dir.join("kubelet-client.pem")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600,
        "the key is the node's alone"
    );
    let again = node_credentials(&bootstrap, &name, &dir, (Duration::from_secs(1), None)).await;
    assert_eq!(again.unwrap(), kubeconfig, "kept, not asked for again");

    let as_node = Client::new(RemoteClient::from_kubeconfig(&kubeconfig).await.unwrap());
    let nodes: Api<Node> = Api::all(as_node);
    let me = nodes.create(&PostParams::default(), node(&name)).await;
    assert!(me.is_ok(), "a node registers itself: {me:?}");
    let other = nodes
        .create(&PostParams::default(), node(&format!("{name}-other")))
        .await;
    assert!(
        matches!(other, Err(Error::Forbidden { .. })),
        "NodeRestriction: no other node: {other:?}"
    );

    let admin = Client::new(
        RemoteClient::from_kubeconfig(&env_path("PODVISOR_TEST_CLUSTER_KUBECONFIG"))
            .await
            .unwrap(),
    );
    Api::<Node>::all(admin)
        .delete(&name, &Default::default())
        .await
        .unwrap();
}
