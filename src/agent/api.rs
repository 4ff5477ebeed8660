//! What the agent serves next to the debug endpoint beyond the actor tree: the manifest
//! files that could not be used (`GET /debug/manifest-errors`, their paths and reasons),
//! which `podvisor get pods` reports. Pods themselves are the Kubernetes API's.
//!
//! Paths and reasons can quote a manifest, so the route needs the bearer token (the debug
//! endpoint's own when configured, else the Kubernetes API's, which only the agent's user
//! can read in `<state_dir>/pki/token`).

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use podvisor_actors::Recipient;
use podvisor_kubelet::protocol::manifests::GetManifestErrors;

#[derive(Clone)]
pub struct ApiState {
    pub manifest_errors: Recipient<GetManifestErrors>,
    pub token: std::sync::Arc<str>,
}

pub fn routes(state: ApiState) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(state.clone()))
            .route("/debug/manifest-errors", web::get().to(manifest_errors));
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
