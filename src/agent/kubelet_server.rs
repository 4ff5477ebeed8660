//! The kubelet server (`[server]`): bound before the tree is built (the Node says its port
//! in `daemonEndpoints`), served once the tree runs. In a cluster it trusts the cluster's
//! CA for client certificates and asks the cluster about tokens and permissions;
//! standalone, the node's own API token is its only key.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Context as _;
use podvisor_cluster::{ClusterReviews, RemoteClient, cluster_ca_pem};
use podvisor_kubelet::agent::Agent;
use podvisor_kubelet::protocol::sources::GetDesiredPods;
use podvisor_kubelet::stats::GetSummary;
use podvisor_server::{Bound, NodeToken, Reviewer, ServerConfig, Sources};
use podvisor_streaming::Streams;
use podvisor_streaming::front::Served;

use super::AgentConfig;

pub(crate) fn bind(cfg: &AgentConfig) -> anyhow::Result<Option<Bound>> {
    if !cfg.server.enabled {
        return Ok(None);
    }
    Ok(Some(podvisor_server::bind(cfg.server.address)?))
}

/// What the server is wired to.
pub(crate) struct Wiring<'a> {
    pub cfg: &'a AgentConfig,
    pub node: &'a str,
    pub address: IpAddr,
    pub cluster: Option<RemoteClient>,
    pub streams: Arc<Streams>,
    pub kubelet: &'a Agent,
    pub metrics: Arc<dyn Fn() -> String + Send + Sync>,
}

pub(crate) fn serve(bound: Bound, w: Wiring<'_>) -> anyhow::Result<Served> {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let hosts = [
        w.node,
        hostname.trim(),
        &w.address.to_string(),
        "localhost",
        "127.0.0.1",
    ];
    let mut hosts: Vec<String> = hosts
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.to_string())
        .collect();
    hosts.dedup();
    let (reviewer, client_ca): (Arc<dyn Reviewer>, Option<String>) =
        match (w.cluster, &w.cfg.cluster.kubeconfig) {
            (Some(remote), Some(kubeconfig)) => {
                let ca = cluster_ca_pem(kubeconfig).context("the cluster's CA")?;
                (Arc::new(ClusterReviews::new(remote)), Some(ca))
            }
            _ => {
                let creds = podvisor_apiserver::tls::load_or_make(&w.cfg.state_dir.join("pki"))?;
                (Arc::new(NodeToken::new(&creds.token)), None)
            }
        };
    let config = ServerConfig {
        node: w.node.to_string(),
        hosts,
        client_ca,
    };
    let served = bound.serve(&config, reviewer, w.streams, sources(w.kubelet, w.metrics))?;
    Ok(served)
}

fn sources(kubelet: &Agent, metrics: Arc<dyn Fn() -> String + Send + Sync>) -> Sources {
    let desired = kubelet.sync_loop.recipient::<GetDesiredPods>();
    let stats = kubelet.stats.recipient::<GetSummary>();
    Sources {
        pods: Arc::new(move || {
            let desired = desired.clone();
            Box::pin(async move {
                match desired.send(GetDesiredPods).await {
                    Ok(d) => d.pods.iter().map(|p| (**p).clone()).collect(),
                    Err(_) => Vec::new(),
                }
            })
        }),
        summary: Arc::new(move || {
            let stats = stats.clone();
            Box::pin(async move { stats.send(GetSummary).await.ok().flatten() })
        }),
        metrics,
    }
}
