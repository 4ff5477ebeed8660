//! A minimal HTTP/1.1 GET client for the CLI commands that read the debug endpoint. The
//! endpoint is local and plain HTTP, so a full client library would be dead weight.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("endpoint {0:?} is not an http://host:port URL")]
    BadUrl(String),
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

/// `GET {endpoint}{path}`; returns the body of a 2xx answer.
pub async fn get(endpoint: &str, path: &str, token: Option<&str>) -> Result<String, ClientError> {
    let timeout = Duration::from_secs(10);
    tokio::time::timeout(timeout, get_inner(endpoint, path, token))
        .await
        .map_err(|_| ClientError::Timeout {
            endpoint: endpoint.to_string(),
            timeout,
        })?
}

async fn get_inner(endpoint: &str, path: &str, token: Option<&str>) -> Result<String, ClientError> {
    let host = host_of(endpoint)?;
    let mut stream = TcpStream::connect(host)
        .await
        .map_err(|source| ClientError::Connect {
            endpoint: endpoint.to_string(),
            source,
        })?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
    let io = |source| ClientError::Connect {
        endpoint: endpoint.to_string(),
        source,
    };
    stream.write_all(request.as_bytes()).await.map_err(io)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.map_err(io)?;
    let (status, body) = parse(&raw).ok_or_else(|| ClientError::Malformed(endpoint.to_string()))?;
    if !(200..300).contains(&status) {
        return Err(ClientError::Status {
            endpoint: endpoint.to_string(),
            path: path.to_string(),
            status,
            body: body.trim().to_string(),
        });
    }
    Ok(body)
}

/// Reads a response's head: the head's text, the status, and whatever of the body came
/// with it.
async fn read_head(
    stream: &mut TcpStream,
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

/// `GET {endpoint}{path}`, handing the body to `sink` as it arrives (for `logs -f`), until
/// the server ends it. No overall timeout: a followed log may flow for hours.
pub async fn get_stream(
    endpoint: &str,
    path: &str,
    token: Option<&str>,
    mut sink: impl FnMut(&[u8]),
) -> Result<(), ClientError> {
    let host = host_of(endpoint)?;
    let connect = |source| ClientError::Connect {
        endpoint: endpoint.to_string(),
        source,
    };
    let mut stream = TcpStream::connect(host).await.map_err(connect)?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(connect)?;
    let mut chunk = [0u8; 8192];
    let (head, status, mut body) = read_head(&mut stream, &mut chunk, endpoint).await?;
    if !(200..300).contains(&status) {
        stream.read_to_end(&mut body).await.map_err(connect)?;
        let text = parse(&[head.as_bytes(), b"\r\n\r\n", &body].concat()).map(|(_, b)| b);
        return Err(ClientError::Status {
            endpoint: endpoint.to_string(),
            path: path.to_string(),
            status,
            body: text.unwrap_or_default().trim().to_string(),
        });
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
        let n = stream.read(&mut chunk).await.map_err(connect)?;
        if n == 0 {
            return Ok(());
        }
        body.extend_from_slice(&chunk[..n]);
    }
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

fn host_of(endpoint: &str) -> Result<&str, ClientError> {
    endpoint
        .strip_prefix("http://")
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty() && !h.contains('/'))
        .ok_or_else(|| ClientError::BadUrl(endpoint.to_string()))
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
