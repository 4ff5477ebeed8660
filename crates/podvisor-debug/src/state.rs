//! What every route of the debug endpoint shares: the registry, the health checks, the
//! token, and the check of the token that the agent's own routes use too. Its own module,
//! so the routes and the server each depend on it and not on each other.

use std::sync::Arc;

use actix_web::web;
use podvisor_actors::Registry;

use crate::health::Health;

pub(crate) struct State {
    pub registry: Arc<Registry>,
    pub health: Health,
    pub token: Option<String>,
    pub max_actors: usize,
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    pub allow_fault_injection: bool,
    pub metrics: Option<crate::MoreMetrics>,
    /// The last minutes, for the page's charts.
    pub history: std::sync::Mutex<crate::history::History>,
    pub extras: crate::history::Extras,
}

/// For routes added with [`DebugServer::start_with`](crate::DebugServer::start_with): the 401 to return when the server has
/// a token and the request does not carry it.
pub fn check_token(req: &actix_web::HttpRequest) -> Option<actix_web::HttpResponse> {
    let token = req
        .app_data::<web::Data<State>>()
        .and_then(|s| s.token.clone());
    (!crate::auth::authorized(req, token.as_deref())).then(|| {
        actix_web::HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer"))
            .body("bearer token required\n")
    })
}
