//! The HTTP routes. Every response is built from registry snapshots, which hold counts,
//! times, type names and the actors' own summaries: never message contents.

use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use crate::auth::authorized;
use crate::state::State;
use crate::{html, metrics};

/// Largest page a client may ask for.
const MAX_PAGE: usize = 5000;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(prometheus))
        .route("/debug", web::get().to(page))
        .route("/debug/", web::get().to(page))
        .route("/debug/actors", web::get().to(actors))
        .route("/debug/actors/{id:.*}", web::get().to(actor));
    #[cfg(feature = "fault-injection")]
    cfg.route("/debug/fault/panic/{id:.*}", web::post().to(inject_panic));
}

fn unauthorized() -> HttpResponse {
    HttpResponse::Unauthorized()
        .insert_header(("WWW-Authenticate", "Bearer"))
        .body("bearer token required\n")
}

#[derive(Deserialize)]
struct Page {
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Page {
    fn resolve(&self, max: usize) -> (usize, usize) {
        (
            self.offset.unwrap_or(0),
            self.limit.unwrap_or(max).clamp(1, MAX_PAGE),
        )
    }
}

async fn healthz(state: web::Data<State>) -> HttpResponse {
    report(state.health.check_liveness())
}

async fn readyz(state: web::Data<State>) -> HttpResponse {
    report(state.health.check_readiness())
}

fn report(r: crate::health::Report) -> HttpResponse {
    if r.ok() {
        return HttpResponse::Ok()
            .content_type(ContentType::plaintext())
            .body("ok\n");
    }
    let body: String = r
        .failures
        .iter()
        .map(|(name, why)| format!("{name}: {why}\n"))
        .collect();
    HttpResponse::ServiceUnavailable()
        .content_type(ContentType::plaintext())
        .body(body)
}

async fn actors(req: HttpRequest, state: web::Data<State>, page: web::Query<Page>) -> HttpResponse {
    if !authorized(&req, state.token.as_deref()) {
        return unauthorized();
    }
    let (offset, limit) = page.resolve(state.max_actors);
    HttpResponse::Ok().json(state.registry.tree(offset, limit))
}

async fn actor(req: HttpRequest, state: web::Data<State>, id: web::Path<String>) -> HttpResponse {
    if !authorized(&req, state.token.as_deref()) {
        return unauthorized();
    }
    match state.registry.get(&id) {
        Some(a) => HttpResponse::Ok().json(a),
        None => HttpResponse::NotFound().body(format!("no actor {:?}\n", id.as_str())),
    }
}

async fn page(req: HttpRequest, state: web::Data<State>, page: web::Query<Page>) -> HttpResponse {
    if !authorized(&req, state.token.as_deref()) {
        return unauthorized();
    }
    let (offset, limit) = page.resolve(state.max_actors);
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .body(html::render(
            &state.registry.tree(offset, limit),
            &charts(&state),
        ))
}

fn charts(state: &State) -> String {
    let h = state.history.lock().unwrap_or_else(|e| e.into_inner());
    crate::charts::all(&h, &state.extras, crate::history::now_ms())
}

async fn prometheus(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    if !authorized(&req, state.token.as_deref()) {
        return unauthorized();
    }
    let mut body = metrics::render(&state.registry.totals_by_kind());
    if let Some(more) = &state.metrics {
        (more.0)(&mut body);
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(body)
}

#[cfg(feature = "fault-injection")]
async fn inject_panic(
    req: HttpRequest,
    state: web::Data<State>,
    id: web::Path<String>,
) -> HttpResponse {
    if !state.allow_fault_injection {
        return HttpResponse::NotFound().body("fault injection is not enabled\n");
    }
    if !authorized(&req, state.token.as_deref()) {
        return unauthorized();
    }
    if state
        .registry
        .inject_panic(&id, "requested through the debug endpoint")
    {
        HttpResponse::Accepted().body("panic injected\n")
    } else {
        HttpResponse::NotFound().body(format!("no actor {:?}\n", id.as_str()))
    }
}
