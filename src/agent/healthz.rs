//! The kubelet's health endpoint (`[healthz] address`; 127.0.0.1:10248 under a
//! `KubeletConfiguration`): `GET /healthz` answers 200 `ok` while the PLEG relists in time
//! and 500 with the reason when it does not, as the kubelet answers the checks kubeadm,
//! systemd units and monitoring make.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::Context as _;
use podvisor_kubelet::pleg::PlegHealth;

/// The served endpoint, stopped with the agent.
pub(crate) struct Healthz {
    handle: ServerHandle,
}

impl Healthz {
    pub(crate) async fn stop(&self) {
        self.handle.stop(true).await;
    }
}

async fn healthz(pleg: web::Data<Arc<PlegHealth>>) -> HttpResponse {
    match pleg.check() {
        Ok(()) => HttpResponse::Ok().content_type("text/plain").body("ok"),
        Err(e) => HttpResponse::InternalServerError()
            .content_type("text/plain")
            .body(format!("[-]pleg failed: {e}\nhealthz check failed")),
    }
}

/// The health endpoint, if configured; then systemd is told the agent is ready.
pub(crate) fn serve_ready(
    cfg: &super::AgentConfig,
    kubelet: &podvisor_kubelet::agent::Agent,
) -> anyhow::Result<Option<Healthz>> {
    let pleg = kubelet.pleg_health.clone();
    let served = cfg
        .healthz
        .address
        .map(|a| serve(a, pleg.clone()))
        .transpose()?;
    super::notify::ready(pleg);
    Ok(served)
}

fn serve(address: SocketAddr, pleg: Arc<PlegHealth>) -> anyhow::Result<Healthz> {
    let pleg = web::Data::new(pleg);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(pleg.clone())
            .route("/healthz", web::get().to(healthz))
    })
    .workers(1)
    .disable_signals()
    .bind(address)
    .with_context(|| format!("cannot bind the health endpoint at {address}"))?;
    let address = server.addrs().first().copied().unwrap_or(address);
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    tracing::info!(%address, "health endpoint listening");
    Ok(Healthz { handle })
}
