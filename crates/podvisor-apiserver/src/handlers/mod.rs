//! One entry point for every resource path: parse the target, pick the verb.

mod body;
mod guards;
mod logs;
pub(crate) mod read;
mod scale;
pub(crate) mod tokens;
mod watch;
mod write;

use std::path::PathBuf;

use actix::{Handler, Message};
use actix_web::http::Method;
use actix_web::web::{Bytes, Data, Query};
use actix_web::{HttpRequest, HttpResponse};
use podvisor_actors::ActorRef;
use podvisor_client::Error as ClientError;
use podvisor_core::stats::Summary;
use podvisor_store::StoreActor;
use serde::Deserialize;

use crate::status::ApiError;
use crate::target::{self, Target};

/// The node's and its pods' use, when the agent can say (`metrics.k8s.io`).
pub type UsageSource = std::sync::Arc<
    dyn Fn() -> futures_util::future::BoxFuture<'static, Option<Summary>> + Send + Sync,
>;

/// What the handlers share.
#[derive(Clone)]
pub struct ApiState {
    pub store: ActorRef<StoreActor>,
    /// Where container logs are (`<ns>_<name>_<uid>/<container>/<attempt>.log`).
    pub pod_log_dir: PathBuf,
    /// What the node and its pods use, for `metrics.k8s.io` (not served without it).
    pub usage: Option<UsageSource>,
    /// The node's streaming sessions (`pods/exec`, `attach`, `portforward`); without
    /// them those answer 503.
    pub streams: Option<std::sync::Arc<podvisor_streaming::Streams>>,
    /// Service-account tokens and RBAC, when the node issues tokens (standalone).
    pub accounts: Option<crate::access::Accounts>,
}

impl ApiState {
    /// One store request: a store that cannot answer is a 503, its refusal the matching
    /// Status.
    pub(crate) async fn ask<M, T>(&self, msg: M) -> Result<T, ApiError>
    where
        StoreActor: Handler<M>,
        M: Message<Result = Result<T, ClientError>> + Send + 'static,
        T: Send,
    {
        Ok(self
            .store
            .send(msg)
            .await
            .map_err(ApiError::unavailable)??)
    }
}

/// The query parameters the verbs take.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    pub watch: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<usize>,
    #[serde(rename = "continue")]
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_watch_bookmarks: Option<bool>,
    pub include_object: Option<String>,
    pub dry_run: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub container: Option<String>,
    pub follow: Option<bool>,
    pub previous: Option<bool>,
    pub tail_lines: Option<usize>,
    pub limit_bytes: Option<u64>,
    pub timestamps: Option<bool>,
    pub since_seconds: Option<i64>,
    pub since_time: Option<String>,
    pub field_validation: Option<String>,
    pub field_manager: Option<String>,
    pub force: Option<bool>,
}

impl Params {
    pub fn is_watch(&self) -> bool {
        matches!(self.watch.as_deref(), Some("true" | "1"))
    }

    pub fn strict(&self) -> bool {
        self.field_validation.as_deref() == Some("Strict")
    }

    pub fn dry_run(&self) -> bool {
        self.dry_run.as_deref() == Some("All")
    }
}

/// kube-apiserver's check of `dryRun` (query or DeleteOptions): `All` is the only value; any
/// other is refused rather than taken as "no dry run", which would carry the write out.
pub(crate) fn check_dry_run<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<(), ApiError> {
    match values.into_iter().find(|v| *v != "All") {
        None => Ok(()),
        Some(v) => Err(ApiError::new(
            422,
            "Invalid",
            format!("dryRun: Unsupported value: {v:?}: supported values: \"All\""),
        )),
    }
}

pub async fn dispatch(
    req: HttpRequest,
    body: Bytes,
    state: Data<ApiState>,
    params: Query<Params>,
) -> HttpResponse {
    let served = |t: &Target| {
        (t.subresource.as_deref()).is_none_or(|sub| crate::discovery::serves(&t.resource, sub))
    };
    let Some(t) = target::parse(req.path()).filter(served) else {
        return ApiError::not_found(&format!("the requested resource ({})", req.path())).respond();
    };
    match route(&req, body, &state, &params, t).await {
        Ok(r) => r,
        Err(e) => e.respond(),
    }
}

async fn route(
    req: &HttpRequest,
    body: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let m = req.method().clone();
    if m != Method::GET {
        check_dry_run(p.dry_run.as_deref())?;
    }
    let sub = t.subresource.clone();
    match (m, t.name.is_some(), sub.as_deref()) {
        (Method::GET, false, None) if p.is_watch() => watch::serve(req, state, p, t).await,
        (Method::GET, false, None) => read::list(req, state, p, t).await,
        (Method::GET, true, None | Some("status" | "ephemeralcontainers" | "resize")) => {
            read::get(req, state, p, t).await
        }
        (Method::GET, true, Some("log")) => logs::serve(state, p, t).await,
        (Method::GET, true, Some("scale")) => scale::get(state, t).await,
        (Method::POST, false, None) => write::create(req, body, state, p, t).await,
        (Method::POST, true, Some("eviction")) => write::evict(req, body, state, p, t).await,
        (Method::POST, true, Some("token")) if t.resource.plural == "serviceaccounts" => {
            tokens::request(req, body, state, t).await
        }
        (Method::PUT, true, None | Some("status" | "ephemeralcontainers" | "resize")) => {
            write::update(req, body, state, p, t).await
        }
        (Method::PATCH, true, None | Some("status" | "ephemeralcontainers" | "resize")) => {
            write::patch(req, body, state, p, t).await
        }
        (Method::PUT | Method::PATCH, true, Some("scale")) => {
            scale::set(req, body, state, p, t).await
        }
        (Method::DELETE, true, None) => write::delete(req, body, state, p, t).await,
        (Method::DELETE, false, None) => write::delete_collection(req, body, state, p, t).await,
        (Method::GET | Method::POST, true, Some("exec" | "attach" | "portforward")) => {
            Err(ApiError::bad_request(
                "Upgrade request required (SPDY or WebSocket, on a connection of its own)",
            ))
        }
        _ => Err(ApiError::method_not_allowed(req.path())),
    }
}
