//! The proxy's side toward the agent: an HTTP/2 server on a unix socket that reads each
//! gRPC call whole, asks the rules what to do with it, and forwards it, answers it
//! itself, or holds it.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use http::request::Parts;
use http::{Request, Response, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::UnixListener;
use tokio::task::JoinSet;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::events::Subscribers;
use crate::record::{Call, Outcome, Record};
use crate::rules::{Action, Rules};
use crate::upstream::Upstream;

/// Every body the proxy answers with: the runtime's (whose frames can fail as hyper's do)
/// or its own (which cannot fail).
type Body = UnsyncBoxBody<Bytes, hyper::Error>;

/// What the server and the test's handle share. Plain mutexes: each is held for a push,
/// a lookup or a send, never across an await.
pub(crate) struct Shared {
    pub(crate) upstream: Upstream,
    pub(crate) rules: Mutex<Rules>,
    pub(crate) record: Mutex<Record>,
    pub(crate) events: Mutex<Subscribers>,
}

/// Accepts connections until the task is aborted; aborting it ends every connection.
pub(crate) async fn serve(listener: UnixListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "cri-proxy: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let svc = service_fn(move |req| handle(shared.clone(), req));
            let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "cri-proxy: client connection ended");
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let at = Instant::now();
    let (parts, body) = req.into_parts();
    let method = parts
        .uri
        .path()
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(status(13, &format!("cri-proxy: reading the request: {e}"))),
    };
    let action = lock(&shared.rules).decide(&method, &body);
    let record = |outcome| {
        lock(&shared.record).push(Call {
            method: method.clone(),
            at,
            took: at.elapsed(),
            body: body.clone(),
            outcome,
        });
    };
    let (response, outcome) = match action {
        None => forward(&shared, parts, body.clone()).await,
        Some(Action::Delay(d)) => {
            tokio::time::sleep(d).await;
            forward(&shared, parts, body.clone()).await
        }
        Some(Action::Fail { code, message }) => (status(code, &message), Outcome::Failed),
        Some(Action::Hang) => {
            record(Outcome::Hung);
            return std::future::pending().await;
        }
        Some(Action::Drop) => {
            let (response, outcome) = forward(&shared, parts, body.clone()).await;
            if outcome == Outcome::Forwarded {
                let _ = response.into_body().collect().await;
                record(Outcome::Dropped);
                return std::future::pending().await;
            }
            (response, outcome)
        }
        Some(Action::ServeEvents) => (served_events(&shared), Outcome::Served),
    };
    record(outcome);
    Ok(response)
}

/// Passes the call to the runtime and its answer (headers, messages, trailers) back.
async fn forward(shared: &Shared, parts: Parts, body: Bytes) -> (Response<Body>, Outcome) {
    let mut req = Request::from_parts(parts, Full::new(body));
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    // An HTTP/2 client request needs an absolute URI; the runtime ignores the authority.
    *req.uri_mut() = Uri::builder()
        .scheme("http")
        .authority("cri-proxy")
        .path_and_query(path)
        .build()
        .expect("a path from a valid URI");
    match shared.upstream.send(req).await {
        Ok(resp) => (resp.map(BodyExt::boxed_unsync), Outcome::Forwarded),
        Err(e) => (status(14, &e.to_string()), Outcome::Unreachable),
    }
}

fn served_events(shared: &Shared) -> Response<Body> {
    let rx = lock(&shared.events).subscribe();
    let frames = UnboundedReceiverStream::new(rx).map(|b| Ok::<_, hyper::Error>(Frame::data(b)));
    Response::builder()
        .header("content-type", "application/grpc")
        .body(StreamBody::new(frames).boxed_unsync())
        .expect("static headers")
}

/// A gRPC trailers-only answer: the status in the headers, no message.
fn status(code: i32, message: &str) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string())
        .header("grpc-message", encode_message(message))
        .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
        .expect("header values are printable ASCII")
}

/// gRPC's percent-encoding of `grpc-message`: printable ASCII but `%` as is.
fn encode_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::encode_message;

    #[test]
    fn grpc_messages_are_percent_encoded() {
        assert_eq!(encode_message("a b"), "a b");
        assert_eq!(encode_message("100%\n"), "100%25%0A");
        assert_eq!(encode_message("é"), "%C3%A9");
    }
}
