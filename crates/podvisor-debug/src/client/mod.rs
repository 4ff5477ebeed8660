//! A minimal HTTP/1.1 GET client for the CLI commands and the tests: the agent's debug
//! endpoint (plain HTTP on loopback) and its Kubernetes API (HTTPS with the CA and bearer
//! token of a kubeconfig). Both are local and answer small documents or one log stream, so
//! a full client library would be dead weight.

mod kubeconfig;
mod tls;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("endpoint {0:?} is not an http(s)://host:port URL")]
    BadUrl(String),
    #[error("cannot use the kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error("cannot reach {endpoint}: {source}")]
    Connect {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("{endpoint} did not answer within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    #[error("malformed response from {0}")]
    Malformed(String),
    #[error("{endpoint}{path} answered {status}: {body}")]
    Status {
        endpoint: String,
        path: String,
        status: u16,
        body: String,
    },
}

/// A byte stream to the server, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Where requests go and how they are authenticated.
#[derive(Clone)]
pub struct Endpoint {
    /// As given (`https://127.0.0.1:6443`), for messages.
    url: String,
    /// `host:port`.
    host: String,
    token: Option<String>,
    tls: Option<Arc<tls::Tls>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// A plain-HTTP endpoint (the debug endpoint), with an optional bearer token.
    pub fn http(url: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let host = url
            .strip_prefix("http://")
            .map(|h| h.trim_end_matches('/'))
            .filter(|h| !h.is_empty() && !h.contains('/'))
            .ok_or_else(|| ClientError::BadUrl(url.to_string()))?;
        Ok(Self {
            url: url.to_string(),
            host: host.to_string(),
            token: token.map(str::to_string),
            tls: None,
        })
    }

    /// The server, CA and token of a kubeconfig's current context (the one the agent
    /// writes to `<state_dir>/kubeconfig`).
    pub fn from_kubeconfig(path: &Path) -> Result<Self, ClientError> {
        let k = kubeconfig::read(path)?;
        let host = k
            .server
            .strip_prefix("https://")
            .map(|h| h.trim_end_matches('/'))
            .filter(|h| !h.is_empty() && !h.contains('/'))
            .ok_or_else(|| ClientError::BadUrl(k.server.clone()))?
            .to_string();
        let tls = tls::Tls::new(&host, &k.ca_pem).map_err(|reason| ClientError::Kubeconfig {
            path: path.display().to_string(),
            reason,
        })?;
        Ok(Self {
            url: k.server,
            host,
            token: k.token,
            tls: Some(Arc::new(tls)),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn connect_error(&self) -> impl Fn(std::io::Error) -> ClientError + '_ {
        |source| ClientError::Connect {
            endpoint: self.url.clone(),
            source,
        }
    }

    async fn connect(&self) -> Result<Box<dyn Io>, ClientError> {
        let tcp = TcpStream::connect(&self.host)
            .await
            .map_err(self.connect_error())?;
        match &self.tls {
            None => Ok(Box::new(tcp)),
            Some(t) => Ok(Box::new(t.wrap(tcp).await.map_err(self.connect_error())?)),
        }
    }

    /// Sends `GET path` with the headers this endpoint needs.
    async fn send(&self, path: &str, accept: &str) -> Result<Box<dyn Io>, ClientError> {
        self.send_as("GET", path, accept).await
    }

    /// Sends a bodiless `method path` with the headers this endpoint needs.
    async fn send_as(
        &self,
        method: &str,
        path: &str,
        accept: &str,
    ) -> Result<Box<dyn Io>, ClientError> {
        let mut stream = self.connect().await?;
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n",
            self.host
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(self.connect_error())?;
        Ok(stream)
    }

    /// `GET path` asking for `accept`; the body of a 2xx answer.
    pub async fn get_as(&self, path: &str, accept: &str) -> Result<String, ClientError> {
        self.call("GET", path, accept).await
    }

    /// A bodiless `POST path`; the body of a 2xx answer.
    pub async fn post(&self, path: &str) -> Result<String, ClientError> {
        self.call("POST", path, "*/*").await
    }

    async fn call(&self, method: &str, path: &str, accept: &str) -> Result<String, ClientError> {
        let timeout = Duration::from_secs(10);
        let work = async {
            let mut stream = self.send_as(method, path, accept).await?;
            let mut raw = Vec::new();
            read_all(&mut stream, &mut raw)
                .await
                .map_err(self.connect_error())?;
            let (status, body) =
                parse(&raw).ok_or_else(|| ClientError::Malformed(self.url.clone()))?;
            if !(200..300).contains(&status) {
                return Err(self.status_error(path, status, body));
            }
            Ok(body)
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| ClientError::Timeout {
                endpoint: self.url.clone(),
                timeout,
            })?
    }

    /// `GET path` as JSON.
    pub async fn get(&self, path: &str) -> Result<String, ClientError> {
        self.get_as(path, "application/json").await
    }

    fn status_error(&self, path: &str, status: u16, body: String) -> ClientError {
        ClientError::Status {
            endpoint: self.url.clone(),
            path: path.to_string(),
            status,
            body: body.trim().to_string(),
        }
    }

    /// `GET path`, handing the body to `sink` as it arrives (for `logs -f`), until the
    /// server ends it. No overall timeout: a followed log may flow for hours.
    pub async fn get_stream(
        &self,
        path: &str,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), ClientError> {
        let mut stream = self.send(path, "*/*").await?;
        let mut chunk = [0u8; 8192];
        let (head, status, mut body) = read_head(&mut stream, &mut chunk, &self.url).await?;
        if !(200..300).contains(&status) {
            read_all(&mut stream, &mut body)
                .await
                .map_err(self.connect_error())?;
            let text = parse(&[head.as_bytes(), b"\r\n\r\n", &body].concat()).map(|(_, b)| b);
            return Err(self.status_error(path, status, text.unwrap_or_default()));
        }
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let mut decoder = Dechunker::default();
        loop {
            if chunked {
                if decoder.feed(&body, &mut sink) {
                    return Ok(());
                }
            } else {
                sink(&body);
            }
            body.clear();
            let n = match stream.read(&mut chunk).await {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                Err(e) => return Err(self.connect_error()(e)),
            };
            if n == 0 {
                return Ok(());
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Reads to the end; a TLS peer that closes without close_notify has still sent it all
/// (`Connection: close` ends the body).
async fn read_all(stream: &mut Box<dyn Io>, out: &mut Vec<u8>) -> std::io::Result<()> {
    match stream.read_to_end(out).await {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        other => other.map(|_| ()),
    }
}

/// `GET {endpoint}{path}` on a plain-HTTP endpoint; returns the body of a 2xx answer.
pub async fn get(endpoint: &str, path: &str, token: Option<&str>) -> Result<String, ClientError> {
    Endpoint::http(endpoint, token)?.get(path).await
}

/// `POST {endpoint}{path}` (no body) on a plain-HTTP endpoint; the body of a 2xx answer.
pub async fn post(endpoint: &str, path: &str, token: Option<&str>) -> Result<String, ClientError> {
    Endpoint::http(endpoint, token)?.post(path).await
}

/// `GET {endpoint}{path}` on a plain-HTTP endpoint, streamed into `sink`.
pub async fn get_stream(
    endpoint: &str,
    path: &str,
    token: Option<&str>,
    sink: impl FnMut(&[u8]),
) -> Result<(), ClientError> {
    Endpoint::http(endpoint, token)?
        .get_stream(path, sink)
        .await
}

/// Reads a response's head: the head's text, the status, and whatever of the body came
/// with it.
async fn read_head(
    stream: &mut Box<dyn Io>,
    chunk: &mut [u8],
    endpoint: &str,
) -> Result<(String, u16, Vec<u8>), ClientError> {
    let connect = |source| ClientError::Connect {
        endpoint: endpoint.to_string(),
        source,
    };
    let mut buf = Vec::new();
    let head_end = loop {
        let n = stream.read(chunk).await.map_err(connect)?;
        if n == 0 {
            return Err(ClientError::Malformed(endpoint.to_string()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ClientError::Malformed(endpoint.to_string()))?;
    Ok((head, status, buf.split_off(head_end + 4)))
}

/// Incremental chunked-encoding decoder: keeps what it cannot decode yet.
#[derive(Default)]
struct Dechunker {
    pending: Vec<u8>,
}

impl Dechunker {
    /// Feeds bytes; returns `true` once the final chunk was seen.
    fn feed(&mut self, data: &[u8], sink: &mut impl FnMut(&[u8])) -> bool {
        self.pending.extend_from_slice(data);
        loop {
            let Some(line_end) = self.pending.windows(2).position(|w| w == b"\r\n") else {
                return false;
            };
            let size = std::str::from_utf8(&self.pending[..line_end])
                .ok()
                .and_then(|s| {
                    usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok()
                });
            let Some(size) = size else { return true };
            if size == 0 {
                return true;
            }
            let start = line_end + 2;
            if self.pending.len() < start + size + 2 {
                return false;
            }
            sink(&self.pending[start..start + size]);
            self.pending.drain(..start + size + 2);
        }
    }
}

fn parse(raw: &[u8]) -> Option<(u16, String)> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut body = raw[split + 4..].to_vec();
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        body = dechunk(&body)?;
    }
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_str = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_str.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_bodies() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
        assert_eq!(parse(plain), Some((200, "hello".into())));
        let chunked = b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse(chunked), Some((503, "abcde".into())));
        assert_eq!(parse(b"garbage"), None);
    }

    #[test]
    fn chunks_split_anywhere_decode_the_same() {
        let wire = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
        for split in 1..wire.len() {
            let mut d = Dechunker::default();
            let mut out = Vec::new();
            let mut sink = |b: &[u8]| out.extend_from_slice(b);
            let done_first = d.feed(&wire[..split], &mut sink);
            let done = done_first || d.feed(&wire[split..], &mut sink);
            assert!(done, "split at {split}");
            assert_eq!(out, b"hello, world", "split at {split}");
        }
    }
}
