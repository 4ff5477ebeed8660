//! One HTTP/1.0 GET, read to its last byte, over a plain TCP connection or over a
//! runtime's port-forward stream (the CRI stream server's WebSocket protocol,
//! `v4.channel.k8s.io`): what `forward-bench` times.

use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// An HTTP response counted as it arrives: complete once its head and `Content-Length`
/// bytes of body are in.
#[derive(Default)]
struct Reply {
    head: Vec<u8>,
    length: Option<usize>,
    body: usize,
}

impl Reply {
    /// Takes the next bytes; true once the response is whole.
    fn feed(&mut self, data: &[u8]) -> anyhow::Result<bool> {
        match self.length {
            Some(_) => self.body += data.len(),
            None => {
                self.head.extend_from_slice(data);
                let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else {
                    anyhow::ensure!(self.head.len() < 64 << 10, "an HTTP head over 64 KiB");
                    return Ok(false);
                };
                self.body = self.head.len() - end - 4;
                self.head.truncate(end);
                self.length = Some(content_length(&self.head)?);
            }
        }
        Ok(self.length.is_some_and(|n| self.body >= n))
    }

    fn finish(&self) -> anyhow::Result<usize> {
        match self.length {
            Some(n) if self.body == n => Ok(n),
            _ => anyhow::bail!(
                "the response ended after {} of {:?} body bytes",
                self.body,
                self.length
            ),
        }
    }
}

fn content_length(head: &[u8]) -> anyhow::Result<usize> {
    let head = String::from_utf8_lossy(head);
    anyhow::ensure!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .with_context(|| format!("no Content-Length in {head}"))
}

fn request(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.0\r\n\r\n").into_bytes()
}

/// GET `path` from `addr` over TCP; the body's length.
pub async fn tcp_get(addr: &str, path: &str) -> anyhow::Result<usize> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(&request(path)).await?;
    let mut buf = vec![0u8; 256 << 10];
    let mut reply = Reply::default();
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 || reply.feed(&buf[..n])? {
            return reply.finish();
        }
    }
}

/// GET `path` through a runtime's port-forward URL (from CRI PortForward) to `port` of
/// its pod, over WebSocket: channel 0 carries the data, channel 1 errors, and the
/// server's first message on each is the port (2 bytes).
pub async fn forward_get(url: &str, port: u16, path: &str) -> anyhow::Result<usize> {
    let url = format!("{}?port={port}", url.replacen("http://", "ws://", 1));
    let mut req = url.as_str().into_client_request()?;
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static("v4.channel.k8s.io"),
    );
    let host = req.uri().authority().context("a host in the URL")?.as_str();
    let tcp = tokio::net::TcpStream::connect(host).await?;
    tcp.set_nodelay(true)?;
    let (mut ws, _) = tokio_tungstenite::client_async(req, tcp).await?;
    ws.send(Message::Binary(
        [&[0u8][..], &request(path)].concat().into(),
    ))
    .await?;
    let mut reply = Reply::default();
    let mut prefixed = [false; 2];
    while let Some(m) = ws.next().await {
        let Message::Binary(data) = m? else { continue };
        let Some((&channel, mut rest)) = data.split_first() else {
            continue;
        };
        let c = usize::from(channel);
        if c < 2 && !prefixed[c] {
            prefixed[c] = true;
            rest = rest.get(2..).unwrap_or_default();
        }
        match channel {
            0 if reply.feed(rest)? => break,
            1 if !rest.is_empty() => {
                anyhow::bail!("port-forward error: {}", String::from_utf8_lossy(rest))
            }
            _ => {}
        }
    }
    let _ = ws.close(None).await;
    reply.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_whole_at_its_content_length_whatever_the_pieces() {
        let mut r = Reply::default();
        assert!(!r.feed(b"HTTP/1.0 200 OK\r\nContent-Len").unwrap());
        assert!(!r.feed(b"gth: 5\r\n\r\nab").unwrap());
        assert!(r.feed(b"cde").unwrap());
        assert_eq!(r.finish().unwrap(), 5);
    }

    #[test]
    fn a_short_or_failed_reply_is_an_error() {
        let mut r = Reply::default();
        r.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nabc")
            .unwrap();
        assert!(r.finish().is_err());
        let mut r = Reply::default();
        let body = vec![b'x'; 100 << 10];
        let whole = [
            &b"HTTP/1.0 200 OK\r\nContent-Length: 102400\r\n\r\n"[..],
            &body,
        ]
        .concat();
        assert!(
            r.feed(&whole).unwrap(),
            "a head and a large body in one read"
        );
        let mut r = Reply::default();
        assert!(r.feed(b"HTTP/1.0 404 Not Found\r\n\r\n").is_err());
    }
}
