//! The HTTPS server: TLS with the agent's own certificate, a bearer token on every route
//! but the health checks, a body size limit, discovery, and the resource dispatcher.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use actix_service::ServiceFactory;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{App, HttpResponse, web};
use podvisor_streaming::front;
use tracing::info;

use crate::access::Access;
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
    /// The addresses the serving certificate carries beyond localhost (the node's).
    pub names: Vec<std::net::IpAddr>,
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
    served: front::Served,
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
    .route("/apis/{group}", web::get().to(named_group))
    .route("/apis/{group}/v1", web::get().to(group_resources))
    .route(
        "/openapi/v3",
        web::get().to(|| async { json(crate::openapi::root()) }),
    )
    .route("/openapi/v3/{gv:.*}", web::get().to(openapi_gv))
    .route("/openapi/v2", web::get().to(openapi_v2))
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
    .route(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        web::post().to(handlers::tokens::review),
    )
    .default_service(web::to(handlers::dispatch));
}

impl ApiServer {
    /// Binds and serves on a thread of its own (the agent's actors keep theirs).
    pub fn start(config: &ApiConfig, state: ApiState) -> Result<ApiServer, ApiServerError> {
        let creds = tls::load_or_make(&config.pki_dir, &config.names)?;
        let mut tls_config = creds.server_config()?;
        tls_config.alpn_protocols = front::ALPN.iter().map(|p| p.to_vec()).collect();
        let token: Arc<str> = creds.token.clone().into();
        let bind = |source| ApiServerError::Bind {
            address: config.address,
            source,
        };
        let listener = std::net::TcpListener::bind(config.address).map_err(bind)?;
        let gate = StreamGate::new(token.clone(), state.clone());
        let access = Access {
            token,
            accounts: state.accounts.clone(),
        };
        let app = move || app(web::Data::new(state), access);
        let served =
            front::spawn("api", listener, tls_config, (app, gate, |_, _| {})).map_err(bind)?;
        let address = served.address;
        write_kubeconfig(&creds, config, address)?;
        info!(%address, kubeconfig = %config.kubeconfig.display(), "Kubernetes API listening");
        Ok(ApiServer { address, served })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting and closes every connection.
    pub async fn stop(&self) {
        self.served.stop().await;
    }
}

/// The app every request that is not a streaming session goes to.
fn app(
    state: web::Data<ApiState>,
    access: Access,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .wrap(access)
        .configure(configure)
}

async fn named_group(group: web::Path<String>) -> HttpResponse {
    match discovery::named_group(&group) {
        Some(g) => json(g),
        None => ApiError::not_found(&format!("the API group {group}")).respond(),
    }
}

async fn group_resources(group: web::Path<String>) -> HttpResponse {
    match discovery::named_group(&group) {
        Some(_) => json(discovery::resources(&group)),
        None => ApiError::not_found(&format!("the API group {group}/v1")).respond(),
    }
}

async fn openapi_gv(gv: web::Path<String>) -> HttpResponse {
    match crate::openapi::group_version(&gv) {
        Some(doc) => HttpResponse::Ok()
            .content_type("application/json")
            .body(doc),
        None => ApiError::not_found(&format!("the OpenAPI document of {gv}")).respond(),
    }
}

/// OpenAPI v2: protobuf when asked first (kubectl), else JSON.
async fn openapi_v2(req: actix_web::HttpRequest) -> HttpResponse {
    // What kube-openapi answers (the Accept form, with `@`, is not a valid media type).
    const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    if accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("protobuf"))
    {
        return HttpResponse::Ok()
            .content_type(PROTOBUF)
            .body(crate::openapi::v2_protobuf());
    }
    HttpResponse::Ok()
        .content_type("application/json")
        .body(crate::openapi::v2())
}

fn write_kubeconfig(
    creds: &Credentials,
    config: &ApiConfig,
    address: SocketAddr,
) -> Result<(), TlsError> {
    // Listening on every address: the kubeconfig on this machine uses loopback.
    let address = match address.ip() {
        ip if ip.is_unspecified() => {
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), address.port())
        }
        _ => address,
    };
    let server = format!("https://{address}");
    let text = creds.kubeconfig(&server, "podvisor");
    if let Some(dir) = config.kubeconfig.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    tls::write_private(&config.kubeconfig, text.as_bytes())
}
