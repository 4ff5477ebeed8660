//! watch: a stream of `{"type":..., "object":...}` lines, one per change, from the
//! revision the client names (or from a synthetic ADDED per existing object when it names
//! none). An expired revision answers one ERROR event with a 410 Status, as
//! kube-apiserver does, so clients relist. The stream ends at `timeoutSeconds` (30 min at
//! most), or when the store cut the watcher off for falling behind.

use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use futures_util::StreamExt;
use podvisor_store::actor::{Watch, WatchEvent};
use podvisor_store::{Change, Resource};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{ApiState, Params, body, read};
use crate::status::{ApiError, status_json};
use crate::table::{self, Include};
use crate::target::Target;

const MAX_TIMEOUT: Duration = Duration::from_secs(1800);

/// How each event's object is written.
#[derive(Clone, Copy)]
struct Format {
    resource: Resource,
    table: Option<Include>,
    bookmarks: bool,
}

fn line(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn encode(f: Format, e: &WatchEvent, first: &mut bool) -> Option<Bytes> {
    match e {
        WatchEvent::Change(c) => Some(encode_change(f, c, first)),
        WatchEvent::Bookmark(rev) if f.bookmarks => {
            let r = f.resource;
            let v = json!({"kind": r.kind.as_str(), "apiVersion": r.api_version(),
                "metadata": {"resourceVersion": rev.to_string()}});
            Some(line("BOOKMARK", v.to_string().as_bytes()))
        }
        WatchEvent::Bookmark(_) => None,
    }
}

fn encode_change(f: Format, c: &Change, first: &mut bool) -> Bytes {
    let kind = c.kind.as_str();
    match f.table {
        None => line(kind, &c.object.json),
        Some(include) => {
            let columns = std::mem::take(first);
            let t = table::table(
                c.object.kind,
                &[&c.object],
                c.revision,
                None,
                include,
                columns,
            );
            line(kind, t.to_string().as_bytes())
        }
    }
}

fn expired(e: &ApiError) -> HttpResponse {
    let status: Value = status_json(&e.status());
    HttpResponse::Ok()
        .content_type("application/json")
        .body(line("ERROR", status.to_string().as_bytes()))
}

fn from_revision(p: &Params) -> Result<Option<u64>, ApiError> {
    match p.resource_version.as_deref() {
        None | Some("") | Some("0") => Ok(None),
        Some(r) => r
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {r:?}"))),
    }
}

pub(super) async fn serve(
    req: &HttpRequest,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let watch = Watch {
        selector: read::selector(&t, p)?,
        from: from_revision(p)?,
    };
    let rx = match state
        .store
        .send(watch)
        .await
        .map_err(ApiError::unavailable)?
    {
        Ok(rx) => rx,
        Err(e @ podvisor_client::Error::Gone(_)) => return Ok(expired(&e.into())),
        Err(e) => return Err(e.into()),
    };
    let format = Format {
        resource: t.resource,
        table: table::wanted(body::accept(req))
            .then(|| Include::parse(p.include_object.as_deref())),
        bookmarks: p.allow_watch_bookmarks == Some(true),
    };
    let timeout = p
        .timeout_seconds
        .map_or(MAX_TIMEOUT, Duration::from_secs)
        .min(MAX_TIMEOUT);
    let stream = events(rx, format).take_until(tokio::time::sleep(timeout));
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("cache-control", "no-cache"))
        .streaming(stream))
}

fn events(
    rx: mpsc::Receiver<WatchEvent>,
    f: Format,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    futures_util::stream::unfold((rx, true), move |(mut rx, mut first)| async move {
        loop {
            let e = rx.recv().await?;
            if let Some(b) = encode(f, &e, &mut first) {
                return Some((Ok(b), (rx, first)));
            }
        }
    })
}
