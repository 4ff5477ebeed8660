//! The HTTPS server: TLS with the agent's own certificate, a bearer token on every route
//! but the health checks, a body size limit, discovery, and the resource dispatcher.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_service::{ServiceFactory, map_config};
use actix_web::dev::{AppConfig, Service, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpRequest, HttpResponse, web};
use futures_util::future::{Either, ready};
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsAcceptor;
use tracing::{error, info};

use crate::discovery;
use crate::handlers::{self, ApiState};
use crate::status::ApiError;
use crate::streams::StreamGate;
use crate::tls::{self, Credentials, TlsError};

/// kube-apiserver's limit on a request body.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// `127.0.0.1:6443` by default.
    pub address: SocketAddr,
    /// Where the CA, certificate, key and token live (made at first start).
    pub pki_dir: PathBuf,
    /// Written at start, mode 0600.
    pub kubeconfig: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiServerError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot bind the API to {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
}

pub struct ApiServer {
    address: SocketAddr,
    stop: watch::Sender<bool>,
    finished: Mutex<Option<oneshot::Receiver<()>>>,
}

fn open_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/livez" | "/readyz")
}

fn json(v: serde_json::Value) -> HttpResponse {
    HttpResponse::Ok().json(v)
}

fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/version",
        web::get().to(|| async { json(discovery::version()) }),
    )
    .route(
        "/api",
        web::get().to(|| async { json(discovery::core_versions()) }),
    )
    .route(
        "/api/v1",
        web::get().to(|| async { json(discovery::resources("")) }),
    )
    .route(
        "/apis",
        web::get().to(|state: web::Data<ApiState>| async move {
            json(discovery::groups(state.usage.is_some()))
        }),
    )
    .route(
        "/apis/metrics.k8s.io",
        web::get().to(|| async {
            let mut g = crate::resource_metrics::group();
            g["kind"] = "APIGroup".into();
            g["apiVersion"] = "v1".into();
            json(g)
        }),
    )
    .route(
        "/apis/metrics.k8s.io/v1beta1",
        web::get().to(|| async { json(crate::resource_metrics::resources()) }),
    )
    .configure(crate::resource_metrics::configure)
    .route(
        "/apis/apps",
        web::get().to(|| async { json(discovery::apps_group()) }),
    )
    .route(
        "/apis/apps/v1",
        web::get().to(|| async { json(discovery::resources("apps")) }),
    )
    .route(
        "/openapi/v3",
        web::get().to(|| async { json(crate::openapi::root()) }),
    )
    .route("/openapi/v3/{gv:.*}", web::get().to(openapi_gv))
    .route(
        "/healthz",
        web::get().to(|| async { HttpResponse::Ok().body("ok") }),
    )
    .route(
        "/livez",
        web::get().to(|| async { HttpResponse::Ok().body("ok") }),
    )
    .route(
        "/readyz",
        web::get().to(|| async { HttpResponse::Ok().body("ok") }),
    )
    .default_service(web::to(handlers::dispatch));
}

impl ApiServer {
    /// Binds and serves on a thread of its own (the agent's actors keep theirs).
    pub fn start(config: &ApiConfig, state: ApiState) -> Result<ApiServer, ApiServerError> {
        let creds = tls::load_or_make(&config.pki_dir)?;
        let mut tls_config = creds.server_config()?;
        tls_config.alpn_protocols = podvisor_streaming::front::ALPN
            .iter()
            .map(|p| p.to_vec())
            .collect();
        let token: Arc<str> = creds.token.clone().into();
        let bind = |source| ApiServerError::Bind {
            address: config.address,
            source,
        };
        let listener = std::net::TcpListener::bind(config.address).map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let address = listener.local_addr().unwrap_or(config.address);
        let (stop, stopping) = watch::channel(false);
        let (done, finished) = oneshot::channel();
        let acceptor = TlsAcceptor::from(Arc::new(tls_config));
        std::thread::Builder::new()
            .name("api".into())
            .spawn(move || {
                let system = actix_web::rt::System::new();
                system.block_on(run(listener, acceptor, state, token, stopping));
                let _ = done.send(());
            })
            .map_err(bind)?;
        write_kubeconfig(&creds, config, address)?;
        info!(%address, kubeconfig = %config.kubeconfig.display(), "Kubernetes API listening");
        Ok(ApiServer {
            address,
            stop,
            finished: Mutex::new(Some(finished)),
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting and closes every connection.
    pub async fn stop(&self) {
        let _ = self.stop.send(true);
        let finished = self.finished.lock().ok().and_then(|mut f| f.take());
        if let Some(finished) = finished {
            let _ = finished.await;
        }
    }
}

/// The API's own runtime: the app built once, connections accepted until `stopping`.
async fn run(
    listener: std::net::TcpListener,
    acceptor: TlsAcceptor,
    state: ApiState,
    token: Arc<str>,
    stopping: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return error!(error = %e, "API: cannot listen"),
    };
    let gate = Rc::new(StreamGate::new(token.clone(), state.clone()));
    let factory = actix_http::HttpService::build()
        // actix-web's HttpServer defaults: a second to finish a response to a client that
        // is still sending (a refused oversized body) before the connection closes.
        .client_request_timeout(Duration::from_secs(5))
        .client_disconnect_timeout(Duration::from_secs(1))
        .finish(map_config(app(web::Data::new(state), token), |_| {
            AppConfig::default()
        }));
    match factory.new_service(()).await {
        Ok(svc) => {
            podvisor_streaming::front::serve(listener, acceptor, Rc::new(svc), gate, stopping).await
        }
        Err(e) => error!(error = ?e, "API: cannot build the app"),
    }
}

/// The app every request that is not a streaming session goes to.
fn app(
    state: web::Data<ApiState>,
    token: Arc<str>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .wrap_fn(move |req, srv| {
            let ok = open_path(req.path())
                || podvisor_debug::auth::authorized(req.request(), Some(&token));
            if ok {
                Either::Left(srv.call(req))
            } else {
                let (r, _) = req.into_parts();
                Either::Right(ready(Ok(unauthorized(r))))
            }
        })
        .configure(configure)
}

async fn openapi_gv(gv: web::Path<String>) -> HttpResponse {
    match crate::openapi::group_version(&gv) {
        Some(doc) => json(doc),
        None => ApiError::not_found(&format!("the OpenAPI document of {gv}")).respond(),
    }
}

fn unauthorized(r: HttpRequest) -> ServiceResponse {
    ServiceResponse::new(r, ApiError::unauthorized().respond())
}

fn write_kubeconfig(
    creds: &Credentials,
    config: &ApiConfig,
    address: SocketAddr,
) -> Result<(), TlsError> {
    let server = format!("https://{address}");
    let text = creds.kubeconfig(&server, "podvisor");
    if let Some(dir) = config.kubeconfig.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    tls::write_private(&config.kubeconfig, text.as_bytes())
}
