//! Service accounts on a node standing alone: the token signer (kept in `<state_dir>/pki`),
//! the API's CA that every namespace's `kube-root-ca.crt` carries, and where pods reach the
//! node's API (`KUBERNETES_SERVICE_HOST`/`_PORT`, through a `default/kubernetes` Service
//! of the node's address and the API's port, known once the API has bound).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use podvisor_auth::Signer;
use podvisor_volumes::{ServiceLister, SourceError};

use super::{AgentConfig, host};

/// What the standalone node's accounts need.
#[derive(Clone)]
pub(crate) struct Standalone {
    pub signer: Arc<Signer>,
    pub ca_pem: String,
    /// The API's address as pods reach it, once it listens where they can.
    pub endpoint: Arc<OnceLock<SocketAddr>>,
}

/// The names the API's serving certificate carries beyond localhost: the node's address.
pub(crate) fn api_names(cfg: &AgentConfig) -> Vec<IpAddr> {
    vec![host::address(cfg)]
}

pub(crate) fn standalone(cfg: &AgentConfig) -> anyhow::Result<Standalone> {
    let pki = cfg.state_dir.join("pki");
    let creds = podvisor_apiserver::tls::load_or_make(&pki, &api_names(cfg))?;
    let signer = Signer::load_or_make(&pki).context("the service-account signing key")?;
    Ok(Standalone {
        signer: Arc::new(signer),
        ca_pem: creds.ca_pem,
        endpoint: Arc::new(OnceLock::new()),
    })
}

/// Standalone, the node issues service-account tokens; in a cluster, the cluster does.
pub(crate) fn when_standalone(
    cfg: &AgentConfig,
    cluster: &super::node::Cluster,
) -> anyhow::Result<Option<Standalone>> {
    match cluster {
        None => Ok(Some(standalone(cfg)?)),
        Some(_) => Ok(None),
    }
}

/// Where pods reach an API bound to `bound`: the node's address when the API listens on
/// it (or on every address); none when it listens on loopback only.
pub(crate) fn pod_endpoint(bound: SocketAddr, node: IpAddr) -> Option<SocketAddr> {
    let ip = bound.ip();
    (ip.is_unspecified() || ip == node)
        .then_some(SocketAddr::new(node, bound.port()))
        .filter(|a| !a.ip().is_loopback())
}

/// The `default/kubernetes` Service in-cluster clients find the API by.
pub(crate) struct ApiService(pub Arc<OnceLock<SocketAddr>>);

#[async_trait]
impl ServiceLister for ApiService {
    async fn services(&self, _ns: &str, _links: bool) -> Result<Vec<Arc<Service>>, SourceError> {
        let Some(at) = self.0.get() else {
            return Ok(Vec::new());
        };
        let mut s = Service::default();
        s.metadata.name = Some("kubernetes".into());
        s.metadata.namespace = Some("default".into());
        s.spec = Some(ServiceSpec {
            cluster_ip: Some(at.ip().to_string()),
            ports: Some(vec![ServicePort {
                name: Some("https".into()),
                port: i32::from(at.port()),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        });
        Ok(vec![Arc::new(s)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_reach_the_api_at_the_node_s_address_unless_it_listens_on_loopback() {
        let node: IpAddr = "10.0.0.5".parse().unwrap();
        let at = |s: &str| pod_endpoint(s.parse().unwrap(), node);
        assert_eq!(at("0.0.0.0:6443"), Some("10.0.0.5:6443".parse().unwrap()));
        assert_eq!(at("10.0.0.5:7000"), Some("10.0.0.5:7000".parse().unwrap()));
        assert_eq!(at("127.0.0.1:6443"), None);
        assert_eq!(at("10.0.0.9:6443"), None);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(pod_endpoint("0.0.0.0:6443".parse().unwrap(), lo), None);
    }
}
