//! The agent's local API, served next to the debug endpoint: what `podvisor get pods`,
//! `describe pod` and `logs` read.
//!
//! Every route shows pod specs, env values or logs, so every route needs the bearer token
//! (the debug endpoint's own when configured, else the Kubernetes API's, which only the
//! agent's user can read in `<state_dir>/pki/token`).
//!
//! `GET /api/v1/pods` (a Kubernetes `PodList`), `GET /api/v1/pods/{name}` (the pod with
//! its events), `GET /api/v1/pods/{name}/log?container=&follow=&previous=` (the
//! container's output, streamed with `follow=true`), `GET /api/v1/manifest-errors`.

use std::path::PathBuf;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use podvisor_actors::Recipient;
use podvisor_kubelet::protocol::manifests::GetManifestErrors;
use podvisor_kubelet::protocol::status::{GetPod, ListPods, PodRecord};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

#[derive(Clone)]
pub struct ApiState {
    pub pods: Recipient<ListPods>,
    pub pod: Recipient<GetPod>,
    pub manifest_errors: Recipient<GetManifestErrors>,
    pub pod_log_dir: PathBuf,
    pub token: std::sync::Arc<str>,
}

/// The 401 for a request without the token.
fn check_token(req: &HttpRequest) -> Option<HttpResponse> {
    let state = req.app_data::<web::Data<ApiState>>()?;
    (!podvisor_debug::auth::authorized(req, Some(&state.token))).then(|| {
        HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer"))
            .body("bearer token required (see `podvisor kubeconfig`, or <state_dir>/pki/token)\n")
    })
}

pub fn routes(state: ApiState) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(state.clone()))
            .route("/api/v1/pods", web::get().to(list))
            .route("/api/v1/pods/{name}", web::get().to(get))
            .route("/api/v1/pods/{name}/log", web::get().to(log))
            .route("/api/v1/manifest-errors", web::get().to(manifest_errors));
    }
}

/// A refusal: its status and the one-line reason sent as the body.
struct Reject(StatusCode, String);

impl Reject {
    fn respond(self) -> HttpResponse {
        HttpResponse::build(self.0).body(self.1 + "\n")
    }
}

fn unavailable(e: impl std::fmt::Display) -> Reject {
    Reject(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the agent cannot answer right now: {e}"),
    )
}

async fn list(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    if let Some(r) = check_token(&req) {
        return r;
    }
    match state.pods.send(ListPods).await {
        Ok(records) => HttpResponse::Ok().json(serde_json::json!({
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {},
            "items": records.iter().map(|r| r.pod.as_ref()).collect::<Vec<_>>(),
        })),
        Err(e) => unavailable(e).respond(),
    }
}

async fn find(state: &ApiState, name: &str) -> Result<PodRecord, Reject> {
    match state.pod.send(GetPod::parse(name)).await {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(Reject(
            StatusCode::NOT_FOUND,
            format!("pod {name:?} not found"),
        )),
        Err(e) => Err(unavailable(e)),
    }
}

async fn get(
    req: HttpRequest,
    state: web::Data<ApiState>,
    name: web::Path<String>,
) -> HttpResponse {
    if let Some(r) = check_token(&req) {
        return r;
    }
    match find(&state, &name).await {
        Ok(r) => HttpResponse::Ok().json(r),
        Err(r) => r.respond(),
    }
}

async fn manifest_errors(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    if let Some(r) = check_token(&req) {
        return r;
    }
    match state.manifest_errors.send(GetManifestErrors).await {
        Ok(errors) => HttpResponse::Ok().json(errors),
        Err(e) => unavailable(e).respond(),
    }
}

/// What the file holds past `offset`, if anything.
async fn read_from(path: &std::path::Path, offset: u64) -> Option<Vec<u8>> {
    let mut f = tokio::fs::File::open(path).await.ok()?;
    f.seek(std::io::SeekFrom::Start(offset)).await.ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).await.ok()?;
    (!buf.is_empty()).then_some(buf)
}

#[derive(Deserialize)]
struct LogQuery {
    container: Option<String>,
    #[serde(default)]
    follow: bool,
    #[serde(default)]
    previous: bool,
}

/// The log file of the container the query names (or the only one).
/// One container instance's log: which file, and which instance (to know when it ends).
struct LogTarget {
    path: PathBuf,
    container: String,
    attempt: i32,
}

/// Whether the instance a follow is reading is still the container's current, running one.
fn still_running(r: &PodRecord, container: &str, attempt: i32) -> bool {
    let status = r.pod.status.clone().unwrap_or_default();
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .find(|s| s.name == container)
        .is_some_and(|s| {
            s.restart_count == attempt && s.state.as_ref().is_some_and(|st| st.running.is_some())
        })
}

fn log_file(state: &ApiState, r: &PodRecord, q: &LogQuery) -> Result<LogTarget, Reject> {
    let pod = &r.pod;
    let spec = pod.spec.clone().unwrap_or_default();
    let names: Vec<String> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|c| c.name.clone())
        .collect();
    let container = match (&q.container, spec.containers.as_slice()) {
        (Some(c), _) if names.contains(c) => c.clone(),
        (Some(c), _) => {
            return Err(Reject(
                StatusCode::NOT_FOUND,
                format!(
                    "container {c:?} is not in pod {:?}; choose one of: {}",
                    pod.metadata.name.as_deref().unwrap_or(""),
                    names.join(", ")
                ),
            ));
        }
        (None, [only]) => only.name.clone(),
        (None, _) => {
            return Err(Reject(
                StatusCode::BAD_REQUEST,
                format!(
                    "pod {:?} has several containers; choose one with -c: {}",
                    pod.metadata.name.as_deref().unwrap_or(""),
                    names.join(", ")
                ),
            ));
        }
    };
    let status = pod.status.clone().unwrap_or_default();
    let restarts = status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .find(|s| s.name == container)
        .map_or(0, |s| s.restart_count);
    let attempt = if q.previous { restarts - 1 } else { restarts };
    if attempt < 0 {
        return Err(Reject(
            StatusCode::BAD_REQUEST,
            format!("container {container:?} has not restarted: no previous log"),
        ));
    }
    let path = state
        .pod_log_dir
        .join(format!(
            "{}_{}_{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or(""),
            pod.metadata.uid.as_deref().unwrap_or("")
        ))
        .join(&container)
        .join(format!("{attempt}.log"));
    Ok(LogTarget {
        path,
        container,
        attempt,
    })
}

/// Turns CRI log lines (`<time> <stream> <P|F> <text>`) into the container's output.
/// Returns the bytes consumed (whole lines only) and the text.
pub fn decode_cri_log(data: &[u8]) -> (usize, Vec<u8>) {
    let mut out = Vec::new();
    let mut consumed = 0;
    while let Some(end) = data[consumed..].iter().position(|b| *b == b'\n') {
        let line = &data[consumed..consumed + end];
        consumed += end + 1;
        let mut parts = line.splitn(4, |b| *b == b' ');
        let (_time, _stream, tag, text) = (parts.next(), parts.next(), parts.next(), parts.next());
        out.extend_from_slice(text.unwrap_or_default());
        if tag != Some(b"P") {
            out.push(b'\n');
        }
    }
    (consumed, out)
}

async fn log(
    req: HttpRequest,
    state: web::Data<ApiState>,
    name: web::Path<String>,
    q: web::Query<LogQuery>,
) -> HttpResponse {
    if let Some(r) = check_token(&req) {
        return r;
    }
    let record = match find(&state, &name).await {
        Ok(r) => r,
        Err(r) => return r.respond(),
    };
    let target = match log_file(&state, &record, &q) {
        Ok(t) => t,
        Err(r) => return r.respond(),
    };
    if !q.follow {
        return match tokio::fs::read(&target.path).await {
            Ok(data) => HttpResponse::Ok()
                .content_type("text/plain; charset=utf-8")
                .body(decode_cri_log(&data).1),
            Err(e) => {
                HttpResponse::NotFound().body(format!("no log at {}: {e}\n", target.path.display()))
            }
        };
    }
    // Follow: send what is there, then whatever is appended, until the instance stops
    // running (checked once a second while nothing new arrives) or the client leaves.
    let lookup = state.pod.clone();
    let name = name.into_inner();
    let stream = futures_util::stream::unfold(
        (target, 0u64, Vec::new()),
        move |(target, offset, mut pending)| {
            let (lookup, name) = (lookup.clone(), name.clone());
            async move {
                let mut idle = 0u32;
                loop {
                    if let Some(buf) = read_from(&target.path, offset).await {
                        let offset = offset + buf.len() as u64;
                        pending.extend_from_slice(&buf);
                        let (used, text) = decode_cri_log(&pending);
                        pending.drain(..used);
                        return Some((
                            Ok::<_, actix_web::Error>(Bytes::from(text)),
                            (target, offset, pending),
                        ));
                    }
                    idle += 1;
                    if idle.is_multiple_of(5) {
                        let running = matches!(
                            lookup.send(GetPod::parse(&name)).await,
                            Ok(Some(r)) if still_running(&r, &target.container, target.attempt)
                        );
                        // One last read: what it wrote before it stopped.
                        if !running && read_from(&target.path, offset).await.is_none() {
                            return None;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        },
    );
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .streaming(stream)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cri_log_lines_become_plain_output() {
        let data = b"2026-11-22T10:00:00.1Z stdout F hello\n2026-11-22T10:00:00.2Z stderr P par\n2026-11-22T10:00:00.3Z stderr F tial\n2026-11-22T10:00:00.4Z stdout F incompl";
        let (used, out) = super::decode_cri_log(data);
        assert_eq!(out, b"hello\npartial\n");
        assert_eq!(&data[used..], b"2026-11-22T10:00:00.4Z stdout F incompl");
    }
}
