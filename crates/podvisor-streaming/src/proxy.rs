//! The upgrade-aware proxy: the client's request goes to the runtime's stream server as
//! it came (less its credentials), the server's answer comes back as it went, and after a
//! `101 Switching Protocols` bytes flow both ways untouched, SPDY or WebSocket alike, as
//! the kubelet proxies them. Memory is two fixed copy buffers per session; a slow reader
//! slows the writer (nothing queues); a session with no traffic for the idle limit ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tracing::debug;

use crate::error::StreamError;
use crate::head::{RequestHead, fill, parse_response};
use crate::watched::Watched;

/// How long the stream server may take to accept and answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that stay here: the client's credentials for this server, and the host.
const DROPPED: [&str; 4] = ["host", "authorization", "proxy-authorization", "cookie"];

/// Serves one streaming request whose runtime URL is `url`: `rest` is what the client
/// sent after its head. Returns when either side closes or the session idles out; an
/// error only when the client has had no answer yet (the caller answers it).
pub async fn proxy<C>(
    client: C,
    head: &RequestHead,
    rest: Bytes,
    url: &str,
    idle: Duration,
) -> Result<(), StreamError>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let upstream = Upstream::parse(url)?;
    let connect = TcpStream::connect(&upstream.authority);
    let mut server = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| StreamError::Upstream(format!("{} did not accept", upstream.authority)))?
        .map_err(|e| StreamError::Upstream(format!("{}: {e}", upstream.authority)))?;
    // SPDY and WebSocket frames are small writes: Nagle's algorithm would hold each behind
    // the peer's delayed ACK.
    let _ = server.set_nodelay(true);
    server
        .write_all(&request_bytes(head, &upstream, head.query()))
        .await?;
    server.write_all(&rest).await?;
    let answer = tokio::time::timeout(CONNECT_TIMEOUT, read_answer(&mut server))
        .await
        .map_err(|_| StreamError::Upstream("no answer".into()))??;
    let (code, raw) = answer;
    let last = Arc::new(Mutex::new(Instant::now()));
    let mut client = Watched::new(client, last.clone());
    client.write_all(&raw).await?;
    if code != 101 {
        debug!(code, "the stream server refused the session");
    }
    // Also after a refusal: its body follows, and either side's close ends it. From here
    // on the client has its answer, so how the session ended is only logged.
    let pipe = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, BUF, BUF);
    let ended = tokio::select! {
        r = pipe => r.map(|_| ()).map_err(StreamError::from),
        () = idle_for(&last, idle) => Err(StreamError::Idle(idle)),
    };
    if let Err(e) = ended {
        debug!(error = %e, "streaming session ended");
    }
    Ok(())
}

/// Each direction's copy buffer: the size of Go's `io.Copy` the kubelet proxies with, so a
/// large transfer takes a quarter of the reads, writes and TLS records 8 KiB would.
const BUF: usize = 32 << 10;

/// Resolves once nothing has moved for `idle`.
async fn idle_for(last: &Mutex<Instant>, idle: Duration) {
    loop {
        let since = last.lock().map(|t| t.elapsed()).unwrap_or(idle);
        if since >= idle {
            return;
        }
        tokio::time::sleep(idle - since).await;
    }
}

/// The stream server's whole answer head (and whatever followed it).
async fn read_answer(server: &mut TcpStream) -> Result<(u16, BytesMut), StreamError> {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        if let Some((code, _)) = parse_response(&buf)? {
            return Ok((code, buf));
        }
        if !fill(server, &mut buf).await? {
            return Err(StreamError::Upstream("closed before answering".into()));
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Upstream {
    authority: String,
    path: String,
}

impl Upstream {
    fn parse(url: &str) -> Result<Upstream, StreamError> {
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(StreamError::Upstream(format!(
                "unsupported stream URL {url:?} (only plain HTTP on the node is proxied)"
            )));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        Ok(Upstream {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }
}

/// The request the stream server sees: the runtime's path (the client's query added when
/// the runtime's has none: WebSocket port-forward names its ports there), the client's
/// headers but its credentials.
fn request_bytes(head: &RequestHead, up: &Upstream, query: &str) -> Vec<u8> {
    let mut target = up.path.clone();
    if !query.is_empty() && !target.contains('?') {
        target = format!("{target}?{query}");
    }
    let mut out = format!(
        "{} {target} HTTP/1.1\r\nHost: {}\r\n",
        head.method, up.authority
    )
    .into_bytes();
    for (name, value) in &head.headers {
        if DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d)) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
