//! The kubelet's server (`:10250`): what the API server reaches a node through (`kubectl
//! logs`, `exec`, `attach`, `port-forward`, `cp`, `top` via metrics-server) and what
//! monitoring scrapes. The kubelet's paths and semantics: `/healthz`, `/pods`,
//! `/containerLogs/{ns}/{pod}/{container}`, `/exec`, `/attach`, `/portForward`, `/run`,
//! `/stats/summary`, `/metrics`, `/metrics/resource`, `/metrics/cadvisor`, `/metrics/probes`,
//! `/configz`; every request authenticated (a
//! client certificate or a bearer token) and authorized on the node object.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod auth;
mod gate;
mod paths;
mod routes;
mod sources;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::{App, web};
use podvisor_streaming::Streams;
use podvisor_streaming::front::{self, Conn, Served};

pub use auth::{Attributes, Guard, Identity, NodeToken, ReviewError, Reviewer};
pub use sources::{
    Cadvisor, CadvisorSource, Machine, MetricsSource, Placement, PodsSource, Sources, SummarySource,
};
pub use tls::ServingCert;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot bind the kubelet server to {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// The listening socket, bound before the node registers (its port goes into the Node's
/// `daemonEndpoints`), served once the agent is up.
pub struct Bound {
    listener: std::net::TcpListener,
    address: SocketAddr,
}

pub fn bind(address: SocketAddr) -> Result<Bound, ServerError> {
    let err = |source| ServerError::Bind { address, source };
    let listener = std::net::TcpListener::bind(address).map_err(err)?;
    let address = listener.local_addr().map_err(err)?;
    Ok(Bound { listener, address })
}

/// Who the server is and whom it trusts.
pub struct ServerConfig {
    pub node: String,
    /// The serving certificate (replaceable while serving).
    pub cert: Arc<tls::ServingCert>,
    /// The cluster's CA (PEM), whose client certificates identify clients.
    pub client_ca: Option<String>,
}

impl Bound {
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn serve(
        self,
        config: &ServerConfig,
        reviewer: Arc<dyn Reviewer>,
        streams: Arc<Streams>,
        sources: Sources,
    ) -> Result<Served, ServerError> {
        let tls = tls::server_config(config.cert.clone(), config.client_ca.as_deref())?;
        let guard = Arc::new(Guard::new(&config.node, reviewer));
        let gate = gate::KubeletGate {
            guard: guard.clone(),
            streams: streams.clone(),
        };
        let state = web::Data::new(routes::ServerState {
            guard,
            streams,
            sources,
        });
        let app = move || {
            App::new()
                .app_data(state)
                .wrap(actix_web::middleware::from_fn(routes::authorize))
                .configure(routes::configure)
        };
        let address = self.address;
        let served = front::spawn(
            "kubelet-server",
            self.listener,
            tls,
            (app, gate, remember_peer),
        )
        .map_err(|source| ServerError::Bind { address, source })?;
        tracing::info!(%address, "kubelet server listening");
        Ok(served)
    }
}

/// A verified client certificate's identity, for the request handlers.
fn remember_peer(conn: &Conn, ext: &mut actix_http::Extensions) {
    if let Some(who) = tls::peer_identity(conn.get_ref().get_ref().1) {
        ext.insert(who);
    }
}
