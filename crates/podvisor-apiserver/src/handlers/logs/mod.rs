//! GET pods/{name}/log: a container's output from the CRI log files the node agent keeps,
//! with `container`, `previous`, `tailLines`, `limitBytes` and `follow` (streamed until
//! that instance of the container stops or the client leaves), always streamed a chunk at
//! a time (`file.rs`), never read whole.

use std::path::PathBuf;
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use k8s_openapi::api::core::v1::Pod;

use super::{ApiState, Params, read};
use crate::status::ApiError;
use crate::target::Target;
use podvisor_core::pod::MIRROR_ANNOTATION;

mod file;
mod wait;

use file::LogReader;

/// One container instance's log file.
struct LogTarget {
    path: PathBuf,
    container: String,
    attempt: i32,
}

fn restarts(pod: &Pod, container: &str) -> Option<(i32, bool)> {
    let st = pod.status.as_ref()?;
    st.container_statuses
        .iter()
        .flatten()
        .chain(st.init_container_statuses.iter().flatten())
        .find(|s| s.name == container)
        .map(|s| {
            (
                s.restart_count,
                s.state.as_ref().is_some_and(|x| x.running.is_some()),
            )
        })
}

fn choose(pod: &Pod, asked: Option<&str>) -> Result<String, ApiError> {
    let spec = pod.spec.clone().unwrap_or_default();
    let names: Vec<String> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|c| c.name.clone())
        .collect();
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    match (asked, spec.containers.as_slice()) {
        (Some(c), _) if names.iter().any(|n| n == c) => Ok(c.to_string()),
        (Some(c), _) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        (None, [only]) => Ok(only.name.clone()),
        (None, _) => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            names.join(" ")
        ))),
    }
}

fn log_target(state: &ApiState, pod: &Pod, p: &Params) -> Result<LogTarget, ApiError> {
    let container = choose(pod, p.container.as_deref())?;
    let (count, _) = restarts(pod, &container).unwrap_or((0, false));
    let attempt = if p.previous == Some(true) {
        count - 1
    } else {
        count
    };
    if attempt < 0 {
        return Err(ApiError::bad_request(format!(
            "previous terminated container {container:?} not found"
        )));
    }
    let m = &pod.metadata;
    // A mirror pod's logs are its static pod's, kept under the static pod's UID.
    let mirror_of = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIRROR_ANNOTATION));
    let dir = format!(
        "{}_{}_{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default(),
        mirror_of.or(m.uid.as_ref()).map_or("", String::as_str)
    );
    let path = state
        .pod_log_dir
        .join(dir)
        .join(&container)
        .join(format!("{attempt}.log"));
    Ok(LogTarget {
        path,
        container,
        attempt,
    })
}

pub(super) async fn serve(
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let pod = read::fetch(state, &t).await?.typed::<Pod>()?;
    let target = log_target(state, &pod, p)?;
    let offset = match p.tail_lines {
        Some(n) => file::tail_offset(&target.path, n).await,
        None => 0,
    };
    let reader = LogReader::new(target.path.clone(), offset, p.limit_bytes);
    let follow = (p.follow == Some(true)).then(|| (state.clone(), t, target));
    Ok(HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(output(reader, follow)))
}

/// The output, a chunk at a time; when following, what is appended after the end, until
/// that instance of the container stops running or `limitBytes` is reached.
fn output(
    reader: LogReader,
    follow: Option<(ApiState, Target, LogTarget)>,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    let growth = follow
        .as_ref()
        .and_then(|(_, _, target)| target.path.parent().map(wait::Growth::watch));
    let state = (reader, follow, growth, tokio::time::Instant::now());
    futures_util::stream::unfold(
        state,
        |(mut reader, mut follow, mut growth, mut asked)| async move {
            while !reader.done() {
                if let Some(text) = reader.next().await {
                    if !text.is_empty() {
                        return Some((Ok(Bytes::from(text)), (reader, follow, growth, asked)));
                    }
                    continue;
                }
                let (state, t, target) = follow.as_ref()?;
                if let Some(g) = growth.as_mut() {
                    g.wait(QUIET).await;
                }
                // At most once a quiet period (the directory may change for another file, a
                // later instance's log).
                if asked.elapsed() >= QUIET {
                    asked = tokio::time::Instant::now();
                    if !still_running(state, t, target).await {
                        // What it wrote before it stopped, then the end.
                        follow = None;
                    }
                }
            }
            None
        },
    )
}

/// How long a followed log may stay quiet before the follow asks whether its container
/// still runs.
const QUIET: Duration = Duration::from_secs(1);

/// Whether the followed instance of the container still runs.
async fn still_running(state: &ApiState, t: &Target, target: &LogTarget) -> bool {
    let pod = read::fetch(state, t)
        .await
        .ok()
        .and_then(|o| o.typed::<Pod>().ok());
    pod.and_then(|p| restarts(&p, &target.container))
        .is_some_and(|(n, r)| n == target.attempt && r)
}
