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
    let host = endpoint
        .strip_prefix("http://")
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty() && !h.contains('/'))
        .ok_or_else(|| ClientError::BadUrl(endpoint.to_string()))?;
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
}
