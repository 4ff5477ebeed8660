//! GET pods/{name}/log: a container's output from the CRI log files the node agent keeps,
//! with `container`, `previous`, `tailLines` and `follow` (streamed until that instance
//! of the container stops or the client leaves).

use std::path::PathBuf;
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use k8s_openapi::api::core::v1::Pod;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

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

/// The last `lines` lines of `text` (all of it without a limit; none for 0).
fn tail(text: Vec<u8>, lines: Option<usize>) -> Vec<u8> {
    let Some(n) = lines else { return text };
    if n == 0 {
        return Vec::new();
    }
    let body = text.strip_suffix(b"\n").unwrap_or(&text);
    let starts: Vec<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let total = starts.len() + 1;
    if n >= total {
        return text;
    }
    text[starts[total - n - 1]..].to_vec()
}

async fn read_from(path: &std::path::Path, offset: u64) -> Option<Vec<u8>> {
    let mut f = tokio::fs::File::open(path).await.ok()?;
    f.seek(std::io::SeekFrom::Start(offset)).await.ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).await.ok()?;
    (!buf.is_empty()).then_some(buf)
}

pub(super) async fn serve(
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let pod: Pod = read::fetch(state, &t)
        .await?
        .typed()
        .ok_or_else(|| ApiError::new(500, "InternalError", "the stored pod cannot be read"))?;
    let target = log_target(state, &pod, p)?;
    let data = tokio::fs::read(&target.path).await.unwrap_or_default();
    let (used, text) = decode_cri_log(&data);
    let text = tail(text, p.tail_lines);
    if p.follow != Some(true) {
        return Ok(HttpResponse::Ok().content_type("text/plain").body(text));
    }
    let first =
        futures_util::stream::once(async move { Ok::<_, actix_web::Error>(Bytes::from(text)) });
    let rest = follow(state.clone(), t, target, used as u64);
    Ok(HttpResponse::Ok()
        .content_type("text/plain")
        .streaming(futures_util::StreamExt::chain(first, rest)))
}

/// What is appended after `offset`, until the instance stops running.
fn follow(
    state: ApiState,
    t: Target,
    target: LogTarget,
    offset: u64,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    futures_util::stream::unfold((offset, Vec::new()), move |(offset, mut pending)| {
        let (state, t, path) = (state.clone(), t.clone(), target.path.clone());
        let (container, attempt) = (target.container.clone(), target.attempt);
        async move {
            let mut idle = 0u32;
            loop {
                if let Some(buf) = read_from(&path, offset).await {
                    let offset = offset + buf.len() as u64;
                    pending.extend_from_slice(&buf);
                    let (used, text) = decode_cri_log(&pending);
                    pending.drain(..used);
                    return Some((Ok(Bytes::from(text)), (offset, pending)));
                }
                idle += 1;
                if idle.is_multiple_of(5) {
                    let pod: Option<Pod> =
                        read::fetch(&state, &t).await.ok().and_then(|o| o.typed());
                    let running = pod
                        .and_then(|p| restarts(&p, &container))
                        .is_some_and(|(n, r)| n == attempt && r);
                    if !running && read_from(&path, offset).await.is_none() {
                        return None;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cri_log_lines_become_plain_output_and_tail_keeps_the_last_lines() {
        let data = b"2026-11-22T10:00:00.1Z stdout F hello\n2026-11-22T10:00:00.2Z stderr P par\n2026-11-22T10:00:00.3Z stderr F tial\n2026-11-22T10:00:00.4Z stdout F incompl";
        let (used, out) = super::decode_cri_log(data);
        assert_eq!(out, b"hello\npartial\n");
        assert_eq!(&data[used..], b"2026-11-22T10:00:00.4Z stdout F incompl");
        assert_eq!(super::tail(b"a\nb\nc\n".to_vec(), Some(2)), b"b\nc\n");
        assert_eq!(super::tail(b"a\nb\n".to_vec(), Some(5)), b"a\nb\n");
        assert!(
            super::tail(b"a\nb\n".to_vec(), Some(0)).is_empty(),
            "--tail=0 panicked"
        );
    }
}
