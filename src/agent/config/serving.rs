//! `[server]`, `[streaming]` and `[healthz]`: what the node serves besides its API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::duration::duration;

/// `[server]`: the kubelet's server, where the API server reaches the node (`kubectl logs`,
/// `exec`, `port-forward` through a cluster) and monitoring scrapes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Server {
    pub enabled: bool,
    /// The kubelet's `0.0.0.0:10250` by default; the Node's `daemonEndpoints` says its port.
    pub address: SocketAddr,
    /// In a cluster, ask it for the serving certificate (signer
    /// `kubernetes.io/kubelet-serving`; the kubelet's `serverTLSBootstrap`).
    pub tls_bootstrap: bool,
    /// The CA that signs the client certificates it takes, as the kubelet's
    /// `authentication.x509.clientCAFile`; unset: the cluster's CA from the kubeconfig.
    pub client_ca_file: Option<PathBuf>,
}

impl Default for Server {
    fn default() -> Self {
        Self {
            enabled: true,
            address: SocketAddr::from(([0, 0, 0, 0], 10250)),
            tls_bootstrap: true,
            client_ca_file: None,
        }
    }
}

/// `[streaming]`: `kubectl exec`, `attach`, `port-forward` and `cp` sessions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Streaming {
    /// Sessions open at once on the node; one more is answered 429.
    pub max_sessions: usize,
    /// A session with no traffic either way for this long is closed (the kubelet's
    /// `streamingConnectionIdleTimeout`).
    #[serde(deserialize_with = "duration")]
    pub idle_timeout: Duration,
}

impl Default for Streaming {
    fn default() -> Self {
        let d = podvisor_streaming::StreamLimits::default();
        Self {
            max_sessions: d.max_sessions,
            idle_timeout: d.idle_timeout,
        }
    }
}

impl Streaming {
    pub fn limits(&self) -> podvisor_streaming::StreamLimits {
        podvisor_streaming::StreamLimits {
            max_sessions: self.max_sessions,
            idle_timeout: self.idle_timeout,
        }
    }
}

/// `[healthz]`: the kubelet's health endpoint (`GET /healthz` answers `ok` while the
/// agent's supervision tree runs), which liveness checks and kubeadm ask at
/// `127.0.0.1:10248`. Off unless an address is given (a `KubeletConfiguration` gives the
/// kubelet's default), so that several agents can run on one machine.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Healthz {
    pub address: Option<SocketAddr>,
}
