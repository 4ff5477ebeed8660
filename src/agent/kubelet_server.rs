//! The kubelet server (`[server]`): bound before the tree is built (the Node says its port
//! in `daemonEndpoints`), served once the tree runs. In a cluster it trusts the cluster's
//! CA for client certificates and asks the cluster about tokens and permissions;
//! standalone, the node's own API token is its only key.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Context as _;
use podvisor_cluster::{ClusterReviews, Issued, RemoteClient, Serving, cluster_ca_pem};
use podvisor_kubelet::agent::Agent;
use podvisor_kubelet::protocol::sources::GetDesiredPods;
use podvisor_kubelet::stats::GetSummary;
use podvisor_server::{Bound, NodeToken, Reviewer, ServerConfig, ServingCert, Sources};
use podvisor_streaming::Streams;
use podvisor_streaming::front::Served;
use tracing::{info, warn};

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
    pub probe_metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// Counts failed serving-certificate requests.
    pub server_renew_errors: prometheus::IntCounter,
}

pub(crate) fn serve(bound: Bound, w: Wiring<'_>) -> anyhow::Result<Served> {
    let hosts = hosts(w.node, w.address);
    let (reviewer, client_ca): (Arc<dyn Reviewer>, Option<String>) =
        match (w.cluster.clone(), &w.cfg.cluster.kubeconfig) {
            (Some(remote), Some(kubeconfig)) => {
                let ca = match &w.cfg.server.client_ca_file {
                    Some(file) => std::fs::read_to_string(file).with_context(|| {
                        format!("the client CA {} (server.client_ca_file)", file.display())
                    })?,
                    None => cluster_ca_pem(kubeconfig).context("the cluster's CA")?,
                };
                (Arc::new(ClusterReviews::new(remote)), Some(ca))
            }
            _ => {
                let pki = w.cfg.state_dir.join("pki");
                let creds = podvisor_apiserver::tls::load_or_make(
                    &pki,
                    &super::accounts::api_names(w.cfg),
                )?;
                (Arc::new(NodeToken::new(&creds.token)), None)
            }
        };
    let cert = ServingCert::self_signed(w.node, &hosts)?;
    if let (Some(remote), true) = (&w.cluster, w.cfg.server.tls_bootstrap) {
        let serving = Serving {
            node: w.node.to_string(),
            hosts,
            dir: w.cfg.state_dir.join("cluster"),
            rotate_after: w.cfg.cluster.rotate_after,
            cluster_ca: client_ca.clone().unwrap_or_default(),
        };
        let errors = w.server_renew_errors.clone();
        actix::spawn(serving_bootstrap(
            serving,
            remote.clone(),
            cert.clone(),
            errors,
        ));
    }
    let config = ServerConfig {
        node: w.node.to_string(),
        cert,
        client_ca,
    };
    let metrics = (w.metrics, w.probe_metrics);
    let mut sources = sources(w.kubelet, metrics);
    sources.configz = Arc::new(super::config::configz(w.cfg));
    sources.cadvisor = super::cadvisor::source(w.kubelet, w.cfg);
    let served = bound.serve(&config, reviewer, w.streams, sources)?;
    Ok(served)
}

/// The names and addresses the serving certificate is for.
fn hosts(node: &str, address: IpAddr) -> Vec<String> {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let hosts = [
        node,
        hostname.trim(),
        &address.to_string(),
        "localhost",
        "127.0.0.1",
    ];
    let mut hosts: Vec<String> = hosts
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.to_string())
        .collect();
    hosts.dedup();
    hosts
}

type Text = Arc<dyn Fn() -> String + Send + Sync>;

fn sources(kubelet: &Agent, (metrics, probe_metrics): (Text, Text)) -> Sources {
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
        probe_metrics,
        configz: Arc::default(),
        cadvisor: Arc::new(|| Box::pin(async { None })),
    }
}

/// How long one serving CSR is waited for before another is made (the kubelet's 15 min).
const CSR_WAIT: std::time::Duration = std::time::Duration::from_secs(15 * 60);
const CSR_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// The server's certificate from the cluster: the kept one, or one asked for, installed
/// once issued and asked for again at its rotation point; self-signed meanwhile.
async fn serving_bootstrap(
    serving: Serving,
    remote: RemoteClient,
    cert: Arc<ServingCert>,
    errors: prometheus::IntCounter,
) {
    loop {
        let issued = match serving.kept() {
            Some(kept) => Ok(kept),
            None => serving.request(&remote, CSR_WAIT).await,
        };
        let renew_at = match issued.map(|i| install(&cert, &i).map(|()| i.renew_at)) {
            Ok(Ok(at)) => at,
            Ok(Err(e)) => {
                warn!(error = %e, "the cluster's serving certificate cannot be served; keeping the one served");
                std::time::SystemTime::now() + CSR_RETRY
            }
            Err(e) => {
                errors.inc();
                warn!(error = %e, "no serving certificate from the cluster yet; serving a self-signed one");
                // A refusal is someone's decision: ask again only after a while.
                let refused = matches!(e, podvisor_cluster::BootstrapError::Refused { .. });
                std::time::SystemTime::now() + if refused { CSR_WAIT } else { CSR_RETRY }
            }
        };
        let wait = renew_at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
            .max(CSR_RETRY);
        tokio::time::sleep(wait).await;
    }
}

fn install(cert: &ServingCert, issued: &Issued) -> Result<(), podvisor_server::tls::TlsError> {
    cert.install(&issued.cert_pem, &issued.key_pem)?;
    info!("the kubelet server serves the cluster's certificate (kubernetes.io/kubelet-serving)");
    Ok(())
}
