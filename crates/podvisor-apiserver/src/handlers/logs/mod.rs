//! GET pods/{name}/log: a container's output from the CRI log files the node agent keeps,
//! with `container`, `previous`, `tailLines`, `limitBytes`, `timestamps`, `sinceSeconds`,
//! `sinceTime` and `follow` (streamed until that instance of the container stops or the
//! client leaves), a chunk at a time (`podvisor_streaming::logs`), never read whole.

use std::path::PathBuf;

use actix_web::HttpResponse;
use k8s_openapi::api::core::v1::Pod;
use podvisor_streaming::logs::{LogOptions, log_stream};

use super::{ApiState, Params, read};
use crate::status::ApiError;
use crate::target::Target;
use podvisor_core::pod::MIRROR_ANNOTATION;

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
        .chain(st.ephemeral_container_statuses.iter().flatten())
        .find(|s| s.name == container)
        .map(|s| {
            (
                s.restart_count,
                s.state.as_ref().is_some_and(|x| x.running.is_some()),
            )
        })
}

fn choose(pod: &Pod, asked: Option<&str>) -> Result<String, ApiError> {
    crate::streams::checks::container_for(pod, asked)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Whether `uid` can name a directory: a UID as the store and the manifest source make
/// them (letters, digits and dashes), nothing that could climb out of the log directory.
fn plain_uid(uid: &str) -> bool {
    !uid.is_empty()
        && uid.len() <= 64
        && uid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The pod's log directory, `<ns>_<name>_<uid>`; a mirror pod's logs are its static pod's,
/// kept under the static pod's UID (its annotation). Namespace and name were validated as
/// DNS names when the pod was stored; the UID is checked here, so no annotation can point
/// the reader at another pod's logs or anywhere else on the node.
fn log_dir(pod: &Pod) -> Result<String, ApiError> {
    let m = &pod.metadata;
    let mirror_of = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(MIRROR_ANNOTATION));
    let uid = mirror_of.or(m.uid.as_ref()).map_or("", String::as_str);
    if !plain_uid(uid) {
        return Err(ApiError::bad_request(format!(
            "the pod's UID {uid:?} names no log directory"
        )));
    }
    Ok(format!(
        "{}_{}_{uid}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default(),
    ))
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
    let path = state
        .pod_log_dir
        .join(log_dir(pod)?)
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
    let options = LogOptions {
        tail_lines: p.tail_lines,
        limit_bytes: p.limit_bytes,
        timestamps: p.timestamps == Some(true),
        since: since(p)?,
    };
    let follow = (p.follow == Some(true)).then(|| {
        let (state, t) = (state.clone(), t.clone());
        let (container, attempt) = (target.container.clone(), target.attempt);
        move || {
            let (state, t, container) = (state.clone(), t.clone(), container.clone());
            async move { still_running(&state, &t, &container, attempt).await }
        }
    });
    let output = log_stream(target.path, &options, follow).await;
    Ok(HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(output))
}

/// `sinceSeconds` or `sinceTime` as a time.
fn since(p: &Params) -> Result<Option<jiff::Timestamp>, ApiError> {
    if let Some(secs) = p.since_seconds {
        let span = jiff::SignedDuration::from_secs(secs.max(0));
        return Ok(jiff::Timestamp::now().checked_sub(span).ok());
    }
    p.since_time
        .as_deref()
        .map(|t| t.parse::<jiff::Timestamp>())
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("sinceTime: {e}")))
}

/// Whether the followed instance of the container still runs.
async fn still_running(state: &ApiState, t: &Target, container: &str, attempt: i32) -> bool {
    let pod = read::fetch(state, t)
        .await
        .ok()
        .and_then(|o| o.typed::<Pod>().ok());
    pod.and_then(|p| restarts(&p, container))
        .is_some_and(|(n, r)| n == attempt && r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, mirror: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = Some("attacker".into());
        p.metadata.name = Some("evil".into());
        p.metadata.uid = Some(uid.into());
        p.metadata.annotations =
            mirror.map(|m| [(MIRROR_ANNOTATION.to_string(), m.to_string())].into());
        p
    }

    #[test]
    fn a_log_directory_comes_from_a_plain_uid_only() {
        let uid = "0b2f6d3c-8a1e-4c1d-9d7e-2f9a1b3c4d5e";
        assert_eq!(
            log_dir(&pod(uid, None)).unwrap(),
            format!("attacker_evil_{uid}")
        );
        assert_eq!(
            log_dir(&pod(uid, Some("3f1a2b"))).unwrap(),
            "attacker_evil_3f1a2b",
            "a mirror's logs are its static pod's"
        );
        for forged in ["x/../../victim_web_1234", "..", "a/b", "", "/etc"] {
            let e = log_dir(&pod(uid, Some(forged))).unwrap_err();
            assert_eq!(e.code, 400, "{forged:?}");
        }
    }
}
