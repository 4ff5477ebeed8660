//! The server's plain routes (every streaming one is the gate's), each behind the
//! kubelet's authentication and authorization.

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::AUTHORIZATION;
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use podvisor_streaming::Streams;

use crate::auth::{Guard, Identity, attributes};
use crate::sources::Sources;

mod cadvisor;
mod logs;
mod resource;
mod run;
mod text;

/// What the handlers share.
pub(crate) struct ServerState {
    pub(crate) guard: Arc<Guard>,
    pub(crate) streams: Arc<Streams>,
    pub(crate) sources: Sources,
}

pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/healthz",
        web::get().to(|| async { HttpResponse::Ok().body("ok") }),
    )
    .route("/pods", web::get().to(pods))
    .route("/configz", web::get().to(configz))
    .route("/stats/summary", web::get().to(summary))
    .route("/stats/summary", web::post().to(summary))
    .route("/metrics", web::get().to(metrics))
    .route("/metrics/resource", web::get().to(resource::serve))
    .route("/metrics/cadvisor", web::get().to(cadvisor::serve))
    .route("/metrics/probes", web::get().to(probe_metrics))
    .route(
        "/containerLogs/{ns}/{pod}/{container}",
        web::get().to(logs::serve),
    )
    .route("/run/{path:.*}", web::post().to(run::serve))
    .default_service(web::to(|| async {
        HttpResponse::NotFound().body("404 page not found\n")
    }));
}

/// Every request's check: its client's certificate or bearer token, then may it.
pub(crate) async fn authorize(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<ServerState>>().cloned() else {
        return Ok(req
            .into_response(HttpResponse::InternalServerError().finish())
            .map_into_right_body());
    };
    let who = req.conn_data::<Identity>().cloned();
    let bearer = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let what = attributes(req.method().as_str(), req.path());
    match state.guard.check(who, bearer, what).await {
        Ok(_) => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body),
        Err(refused) => {
            let code = StatusCode::from_u16(refused.code()).unwrap_or(StatusCode::FORBIDDEN);
            let res = HttpResponse::build(code).body(refused.to_string());
            Ok(req.into_response(res).map_into_right_body())
        }
    }
}

async fn pods(state: web::Data<ServerState>) -> HttpResponse {
    let items = (state.sources.pods)().await;
    HttpResponse::Ok().json(serde_json::json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    }))
}

async fn configz(state: web::Data<ServerState>) -> HttpResponse {
    HttpResponse::Ok().json(&*state.sources.configz)
}

async fn summary(state: web::Data<ServerState>) -> HttpResponse {
    match (state.sources.summary)().await {
        Some(s) => HttpResponse::Ok().json(s),
        None => HttpResponse::InternalServerError()
            .body("Internal Error: the runtime's container stats could not be read\n"),
    }
}

async fn metrics(state: web::Data<ServerState>) -> HttpResponse {
    text_format((state.sources.metrics)())
}

async fn probe_metrics(state: web::Data<ServerState>) -> HttpResponse {
    text_format((state.sources.probe_metrics)())
}

fn text_format(body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(body)
}
