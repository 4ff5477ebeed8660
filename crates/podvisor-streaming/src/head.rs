//! HTTP/1.1 message heads read off a raw connection, bounded: the first request of a
//! connection (to see whether it asks for a stream) and the stream server's answer.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::StreamError;

/// The most a head may take (kube-apiserver and Go's server allow about as much).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;

/// A request line and its headers, as the client sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    /// Path and query as sent (`/api/v1/...?command=ls`).
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn query(&self) -> &str {
        self.target
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default()
    }

    /// The first value of `name` (case-insensitive), if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// Whether the client asks to switch protocols (SPDY or WebSocket).
    pub fn is_upgrade(&self) -> bool {
        let connection = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("connection"));
        let asks = connection
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            });
        asks && self.header("upgrade").is_some()
    }
}

/// A connection's first request head, with every byte read so far (so the connection
/// can be handed on as if unread).
#[derive(Debug, Clone)]
pub struct Sniffed {
    pub head: RequestHead,
    /// The head and whatever followed it already.
    pub raw: Bytes,
    pub head_len: usize,
}

impl Sniffed {
    /// What the client sent after its head.
    pub fn rest(&self) -> Bytes {
        self.raw.slice(self.head_len..)
    }
}

/// Reads until a whole head is in. `Ok(None)` when the connection closed before a
/// single byte.
pub async fn read_request<R: AsyncRead + Unpin>(
    io: &mut R,
) -> Result<Option<Sniffed>, StreamError> {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        if let Some((head, head_len)) = parse_request(&buf)? {
            let raw = buf.freeze();
            return Ok(Some(Sniffed {
                head,
                raw,
                head_len,
            }));
        }
        if !fill(io, &mut buf).await? {
            return match buf.is_empty() {
                true => Ok(None),
                false => Err(StreamError::Malformed("connection closed mid-head".into())),
            };
        }
    }
}

/// The status code of a response head and the length of that head, once complete.
pub fn parse_response(buf: &[u8]) -> Result<Option<(u16, usize)>, StreamError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => Ok(Some((res.code.unwrap_or_default(), n))),
        Ok(httparse::Status::Partial) => too_large(buf),
        Err(e) => Err(StreamError::Upstream(format!("malformed answer: {e}"))),
    }
}

fn parse_request(buf: &[u8]) -> Result<Option<(RequestHead, usize)>, StreamError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let head = RequestHead {
                method: req.method.unwrap_or_default().to_string(),
                target: req.path.unwrap_or_default().to_string(),
                headers: req
                    .headers
                    .iter()
                    .map(|h| (h.name.to_string(), h.value.to_vec()))
                    .collect(),
            };
            Ok(Some((head, n)))
        }
        Ok(httparse::Status::Partial) => too_large::<()>(buf).map(|_| None),
        Err(e) => Err(StreamError::Malformed(e.to_string())),
    }
}

fn too_large<T>(buf: &[u8]) -> Result<Option<T>, StreamError> {
    if buf.len() >= MAX_HEAD_BYTES {
        return Err(StreamError::Malformed(format!(
            "head larger than {MAX_HEAD_BYTES} bytes"
        )));
    }
    Ok(None)
}

/// Reads more into `buf`; false at end of stream.
pub(crate) async fn fill<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut BytesMut,
) -> Result<bool, StreamError> {
    buf.reserve(1024);
    Ok(io.read_buf(buf).await? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_a_head_and_keeps_what_followed() {
        let raw = b"POST /api/v1/namespaces/d/pods/p/exec?command=ls HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\nBODY";
        let sniffed = read_request(&mut &raw[..]).await.unwrap().unwrap();
        let (head, rest) = (&sniffed.head, sniffed.rest());
        assert_eq!(&sniffed.raw[..], &raw[..]);
        assert_eq!(head.method, "POST");
        assert_eq!(head.path(), "/api/v1/namespaces/d/pods/p/exec");
        assert_eq!(head.query(), "command=ls");
        assert!(head.is_upgrade());
        assert_eq!(head.header("UPGRADE"), Some("SPDY/3.1"));
        assert_eq!(&rest[..], b"BODY");
    }

    #[tokio::test]
    async fn a_plain_request_is_no_upgrade_and_a_closed_one_is_none() {
        let raw = b"GET /api HTTP/1.1\r\nConnection: keep-alive\r\n\r\n";
        let sniffed = read_request(&mut &raw[..]).await.unwrap().unwrap();
        assert!(!sniffed.head.is_upgrade());
        assert!(read_request(&mut &b""[..]).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn an_endless_head_is_refused_at_the_bound() {
        let mut raw = b"GET / HTTP/1.1\r\n".to_vec();
        while raw.len() < MAX_HEAD_BYTES + 100 {
            raw.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaa\r\n");
        }
        let err = read_request(&mut &raw[..]).await.unwrap_err();
        assert_eq!(err.code(), 400, "{err}");
    }

    #[test]
    fn response_heads_give_their_code_and_length() {
        let raw = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\nxx";
        assert_eq!(parse_response(raw).unwrap(), Some((101, raw.len() - 2)));
        assert_eq!(parse_response(b"HTTP/1.1 101 Sw").unwrap(), None);
    }
}
