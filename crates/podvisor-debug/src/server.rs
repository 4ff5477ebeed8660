//! Binding and running the debug HTTP server.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::{App, HttpServer, web};
use podvisor_actors::Registry;
use tracing::info;

use crate::health::Health;
use crate::routes;
use crate::state::State;

/// Where podvisor's debug endpoint listens unless configured otherwise.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:9740";

#[derive(Debug, Clone)]
pub struct DebugConfig {
    pub address: SocketAddr,
    /// Required as `Authorization: Bearer <token>` on every route but the health checks.
    /// Mandatory for a non-loopback address.
    pub token: Option<String>,
    /// Most actors one response lists (pages continue with `?offset=`).
    pub max_actors: usize,
    /// Serve `POST /debug/fault/panic/{id}` (only in builds with the `fault-injection`
    /// feature; refused otherwise).
    pub allow_fault_injection: bool,
    /// More metrics for `/metrics`, written after the actors' own (the kubelet's).
    pub metrics: Option<MoreMetrics>,
    /// The agent's series for the debug page's charts (relist and pod start times).
    pub extras: crate::history::Extras,
}

/// Writes metrics in the Prometheus text format at the end of `/metrics`.
#[derive(Clone)]
pub struct MoreMetrics(pub Arc<dyn Fn(&mut String) + Send + Sync>);

impl std::fmt::Debug for MoreMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MoreMetrics")
    }
}

impl Default for DebugConfig {
    fn default() -> Self {
        Self {
            address: DEFAULT_ADDRESS.parse().expect("valid default address"),
            token: None,
            max_actors: 500,
            allow_fault_injection: false,
            metrics: None,
            extras: Default::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DebugError {
    #[error(
        "refusing to serve the debug endpoint on non-loopback address {0} without a bearer token (set debug token)"
    )]
    NonLoopbackWithoutToken(SocketAddr),
    #[error("the debug endpoint's token must not be empty")]
    EmptyToken,
    #[error("cannot bind the debug endpoint to {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// A running debug server. Dropping it does not stop it; call [`DebugServer::stop`].
pub struct DebugServer {
    address: SocketAddr,
    handle: actix_web::dev::ServerHandle,
}

impl DebugServer {
    /// Binds and starts serving on the current actix/tokio runtime (one worker thread).
    pub fn start(
        config: DebugConfig,
        registry: Arc<Registry>,
        health: Health,
    ) -> Result<Self, DebugError> {
        Self::start_with(config, registry, health, |_: &mut web::ServiceConfig| {})
    }

    /// Like [`DebugServer::start`], with more routes served next to the debug ones (the
    /// agent's API). Those routes call [`check_token`] themselves.
    pub fn start_with<F>(
        config: DebugConfig,
        registry: Arc<Registry>,
        health: Health,
        routes: F,
    ) -> Result<Self, DebugError>
    where
        F: Fn(&mut web::ServiceConfig) + Clone + Send + 'static,
    {
        if config.token.as_deref() == Some("") {
            return Err(DebugError::EmptyToken);
        }
        if !config.address.ip().is_loopback() && config.token.is_none() {
            return Err(DebugError::NonLoopbackWithoutToken(config.address));
        }
        let state = web::Data::new(State {
            registry,
            health,
            token: config.token.clone(),
            max_actors: config.max_actors.max(1),
            allow_fault_injection: config.allow_fault_injection,
            metrics: config.metrics.clone(),
            history: Default::default(),
            extras: config.extras.clone(),
        });
        sample_history(state.clone().into_inner());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .configure(routes::configure)
                .configure(routes.clone())
        })
        .workers(1)
        .disable_signals()
        .bind(config.address)
        .map_err(|source| DebugError::Bind {
            address: config.address,
            source,
        })?;
        let address = server.addrs().first().copied().unwrap_or(config.address);
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        info!(%address, "debug endpoint listening");
        Ok(Self { address, handle })
    }

    /// The bound address (with the real port when configured with port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}

/// Samples the registry (and the agent's series) every 5 s for the debug page's charts,
/// for as long as the system runs.
fn sample_history(state: Arc<State>) {
    actix_web::rt::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tick.tick().await;
            let totals = state.registry.totals_by_kind();
            let now = crate::history::now_ms();
            let mut h = state.history.lock().unwrap_or_else(|e| e.into_inner());
            h.push(now, &totals, &state.extras);
        }
    });
}
