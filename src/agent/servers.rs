//! What the agent serves: the debug endpoint (the actor tree, metrics, health, charts, the
//! manifest errors and the Summary API) and the Kubernetes API over the store.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use podvisor_actors::{ActorRef, Recipient, Registry};
use podvisor_apiserver::{Accounts, ApiConfig, ApiServer, ApiState};
use podvisor_debug::history::{Extra, Extras};
use podvisor_debug::{CheckError, DebugConfig, DebugServer, Health, MoreMetrics};
use podvisor_kubelet::agent::Agent;
use podvisor_kubelet::metrics::Metrics;
use podvisor_kubelet::stats::GetSummary;
use podvisor_store::{LocalClient, StoreActor};
use podvisor_streaming::Streams;
use tracing::warn;

use super::{AgentConfig, api};

/// What the debug page charts beside the mailboxes: relists and pod starts, from the
/// kubelet's histograms.
fn chart_series(m: &Metrics) -> Extras {
    let (relist, start) = (m.relist_duration.clone(), m.pod_start.clone());
    Extras(Arc::new(vec![
        Extra {
            name: "PLEG relist",
            unit: "ms",
            read: Arc::new(move || (relist.get_sample_count(), relist.get_sample_sum() * 1e3)),
        },
        Extra {
            name: "pod start (first seen → running)",
            unit: "s",
            read: Arc::new(move || (start.get_sample_count(), start.get_sample_sum())),
        },
    ]))
}

/// The kubelet's metrics, in the text format its scrapers read, after the actors' own.
fn exposition(registry: prometheus::Registry) -> MoreMetrics {
    MoreMetrics(Arc::new(move |out: &mut String| encode(&registry, out)))
}

fn encode(registry: &prometheus::Registry, out: &mut String) {
    let families = registry.gather();
    if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&families, out) {
        warn!(error = %e, "the kubelet metrics could not be written");
    }
}

/// The kubelet's metrics as the kubelet server's `/metrics` gives them.
pub(crate) fn metrics_text(
    registry: prometheus::Registry,
) -> Arc<dyn Fn() -> String + Send + Sync> {
    Arc::new(move || {
        let mut out = String::new();
        encode(&registry, &mut out);
        out
    })
}

/// The probe metrics as the kubelet server's `/metrics/probes` gives them.
pub(crate) fn probe_metrics_text(metrics: &Metrics) -> Arc<dyn Fn() -> String + Send + Sync> {
    let m = metrics.clone();
    Arc::new(move || m.probes.text())
}

/// Liveness from the PLEG; readiness once the manifest directory has been read.
fn health(kubelet: &Agent) -> Health {
    let health = Health::new();
    let liveness = kubelet.pleg_health.clone();
    let pleg = move || liveness.check().map_err(CheckError::of);
    health.liveness("pleg", Arc::new(pleg));
    let ready = kubelet.sources_ready.clone();
    health.readiness(
        "sources",
        Arc::new(move || {
            if ready.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err("the manifest directory has not been read yet".into())
            }
        }),
    );
    health
}

/// The debug endpoint.
pub(crate) fn debug(
    cfg: &AgentConfig,
    registry: Arc<Registry>,
    kubelet: &Agent,
    (metrics, prometheus): (&Metrics, prometheus::Registry),
) -> anyhow::Result<DebugServer> {
    let pki = cfg.state_dir.join("pki");
    let credentials =
        podvisor_apiserver::tls::load_or_make(&pki, &super::accounts::api_names(cfg))?;
    let token = cfg.debug.token.clone().unwrap_or(credentials.token);
    let routes = api::routes(api::ApiState {
        manifest_errors: kubelet.manifest_source.recipient(),
        stats: kubelet.stats.recipient(),
        token: token.into(),
    });
    let config = DebugConfig {
        address: cfg.debug.address,
        token: cfg.debug.token.clone(),
        allow_fault_injection: cfg.debug.fault_injection,
        metrics: Some(exposition(prometheus)),
        extras: chart_series(metrics),
        ..DebugConfig::default()
    };
    Ok(DebugServer::start_with(
        config,
        registry,
        health(kubelet),
        routes,
    )?)
}

/// The Kubernetes API over the store.
pub(crate) fn kubernetes(
    cfg: &AgentConfig,
    store: ActorRef<StoreActor>,
    (stats, streams): (Recipient<GetSummary>, Arc<Streams>),
    standalone: &Option<super::accounts::Standalone>,
) -> anyhow::Result<ApiServer> {
    let api = ApiConfig {
        address: cfg.api.address,
        pki_dir: cfg.state_dir.join("pki"),
        kubeconfig: cfg.state_dir.join("kubeconfig"),
        names: super::accounts::api_names(cfg),
    };
    let accounts = standalone.as_ref().map(|s| Accounts {
        signer: s.signer.clone(),
        client: LocalClient::client(&store),
    });
    let usage: podvisor_apiserver::UsageSource = Arc::new(move || {
        let stats = stats.clone();
        Box::pin(async move { stats.send(GetSummary).await.ok().flatten() })
    });
    let state = ApiState {
        store,
        pod_log_dir: cfg.pod_log_dir.clone(),
        usage: Some(usage),
        streams: Some(streams),
        accounts,
    };
    let server = ApiServer::start(&api, state).context("cannot start the Kubernetes API")?;
    if let Some(s) = standalone {
        let node = super::host::address(cfg);
        match super::accounts::pod_endpoint(server.address(), node) {
            Some(at) => {
                let _ = s.endpoint.set(at);
            }
            None => {
                tracing::info!(address = %server.address(), "the API listens where pods cannot reach it: no KUBERNETES_SERVICE_HOST for them (set [api] address to 0.0.0.0:6443 or the node's address)")
            }
        }
    }
    Ok(server)
}
