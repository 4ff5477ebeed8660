//! What the agent serves next to the debug endpoint beyond the actor tree: the manifest
//! files that could not be used (`GET /debug/manifest-errors`, their paths and reasons),
//! which `podvisor get pods` reports, and the kubelet's Summary API (`/stats/summary`,
//! GET or POST, what the node and each pod use). Pods themselves are the Kubernetes API's.
//!
//! Paths and reasons can quote a manifest, so the route needs the bearer token (the debug
//! endpoint's own when configured, else the Kubernetes API's, which only the agent's user
//! can read in `<state_dir>/pki/token`).

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use podvisor_actors::Recipient;
use podvisor_kubelet::protocol::manifests::GetManifestErrors;
use podvisor_kubelet::stats::GetSummary;

#[derive(Clone)]
pub struct ApiState {
    pub manifest_errors: Recipient<GetManifestErrors>,
    pub stats: Recipient<GetSummary>,
    pub token: std::sync::Arc<str>,
}

pub fn routes(state: ApiState) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(state.clone()))
            .route("/debug/manifest-errors", web::get().to(manifest_errors))
            .route("/stats/summary", web::get().to(summary))
            .route("/stats/summary", web::post().to(summary));
    }
}

async fn manifest_errors(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    if !podvisor_debug::auth::authorized(&req, Some(&state.token)) {
        return HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer"))
            .body("bearer token required (see `podvisor kubeconfig`, or <state_dir>/pki/token)\n");
    }
    match state.manifest_errors.send(GetManifestErrors).await {
        Ok(errors) => HttpResponse::Ok().json(errors),
        Err(e) => HttpResponse::ServiceUnavailable()
            .body(format!("the agent cannot answer right now: {e}\n")),
    }
}

/// The kubelet's `/stats/summary` (the node's and every pod's CPU and memory; with
/// `only_cpu_and_memory=true` too, which is all there is). Behind the debug endpoint's
/// token, like `/metrics`.
async fn summary(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    if let Some(refused) = podvisor_debug::check_token(&req) {
        return refused;
    }
    match state.stats.send(GetSummary).await {
        Ok(Some(summary)) => HttpResponse::Ok().json(summary),
        Ok(None) => HttpResponse::ServiceUnavailable()
            .body("Internal Error: the runtime's container stats could not be read\n"),
        Err(e) => HttpResponse::ServiceUnavailable()
            .body(format!("the agent cannot answer right now: {e}\n")),
    }
}
