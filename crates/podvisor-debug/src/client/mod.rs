//! A small HTTP client for the CLI commands and the tests, on hyper (the one HTTP client
//! stack of the workspace): the agent's debug endpoint (plain HTTP on loopback) and its
//! Kubernetes API (HTTPS with the CA and bearer token of a kubeconfig). One connection per
//! request (`Connection: close`); answers are small documents or one log stream.

mod kubeconfig;
mod tls;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

pub use tls::TlsError;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("endpoint {0:?} is not an http(s)://host:port URL")]
    BadUrl(String),
    #[error("cannot use the kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error("cannot use the kubeconfig {path}: {source}")]
    Tls { path: String, source: TlsError },
    #[error("cannot reach {endpoint}: {source}")]
    Connect {
        endpoint: String,
        source: std::io::Error,
    },
    #[error("{endpoint}: {source}")]
    Http {
        endpoint: String,
        source: hyper::Error,
    },
    #[error("{endpoint} did not answer within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    #[error("invalid request to {0}")]
    Request(String),
    #[error("{endpoint}{path} answered {status}: {body}")]
    Status {
        endpoint: String,
        path: String,
        status: u16,
        body: String,
    },
}

/// How long a whole request may take (a streamed body aside).
const TIMEOUT: Duration = Duration::from_secs(10);

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

/// `host:port` of `url` under `scheme`.
fn host_of<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    url.strip_prefix(scheme)
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty() && !h.contains('/'))
}

impl Endpoint {
    /// A plain-HTTP endpoint (the debug endpoint), with an optional bearer token.
    pub fn http(url: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let host = host_of(url, "http://").ok_or_else(|| ClientError::BadUrl(url.into()))?;
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
        let host = host_of(&k.server, "https://")
            .ok_or_else(|| ClientError::BadUrl(k.server.clone()))?
            .to_string();
        let tls = tls::Tls::new(&host, &k.ca_pem).map_err(|source| ClientError::Tls {
            path: path.display().to_string(),
            source,
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

    fn http_error(&self) -> impl Fn(hyper::Error) -> ClientError + '_ {
        |source| ClientError::Http {
            endpoint: self.url.clone(),
            source,
        }
    }

    /// Sends `req` over a new connection, which a task of its own drives until the
    /// answer's body has been read.
    async fn exchange<S>(
        &self,
        io: S,
        req: Request<Empty<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(self.http_error())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        sender.send_request(req).await.map_err(self.http_error())
    }

    /// `method path` asking for `accept`, with the headers this endpoint needs.
    async fn send(
        &self,
        method: Method,
        path: &str,
        accept: &str,
    ) -> Result<Response<Incoming>, ClientError> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &self.host)
            .header(header::ACCEPT, accept)
            .header(header::CONNECTION, "close");
        if let Some(t) = &self.token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = req
            .body(Empty::new())
            .map_err(|_| ClientError::Request(format!("{}{path}", self.url)))?;
        let tcp = TcpStream::connect(&self.host)
            .await
            .map_err(self.connect_error())?;
        match &self.tls {
            None => self.exchange(tcp, req).await,
            Some(t) => {
                let tls = t.wrap(tcp).await.map_err(self.connect_error())?;
                self.exchange(tls, req).await
            }
        }
    }

    /// The whole body of `resp`, as text.
    async fn text(&self, resp: Response<Incoming>) -> Result<String, ClientError> {
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(self.http_error())?;
        Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned())
    }

    async fn call(&self, method: Method, path: &str, accept: &str) -> Result<String, ClientError> {
        let work = async {
            let resp = self.send(method, path, accept).await?;
            let status = resp.status();
            let body = self.text(resp).await?;
            if !status.is_success() {
                return Err(self.status_error(path, status.as_u16(), body));
            }
            Ok(body)
        };
        tokio::time::timeout(TIMEOUT, work)
            .await
            .map_err(|_| ClientError::Timeout {
                endpoint: self.url.clone(),
                timeout: TIMEOUT,
            })?
    }

    /// `GET path` asking for `accept`; the body of a 2xx answer.
    pub async fn get_as(&self, path: &str, accept: &str) -> Result<String, ClientError> {
        self.call(Method::GET, path, accept).await
    }

    /// A bodiless `POST path`; the body of a 2xx answer.
    pub async fn post(&self, path: &str) -> Result<String, ClientError> {
        self.call(Method::POST, path, "*/*").await
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
        let resp = self.send(Method::GET, path, "*/*").await?;
        let status = resp.status();
        if !status.is_success() {
            let body = self.text(resp).await?;
            return Err(self.status_error(path, status.as_u16(), body));
        }
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.map_err(self.http_error())?.into_data() {
                sink(&data);
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    use super::*;

    /// Serves one connection with `answer`, written in pieces of `piece` bytes.
    async fn serve_once(answer: &'static [u8], piece: usize) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut head).await;
            for part in answer.chunks(piece) {
                s.write_all(part).await.unwrap();
                s.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        url
    }

    #[tokio::test]
    async fn a_chunked_body_split_anywhere_streams_whole() {
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
        for piece in [1, 3, 7, wire.len()] {
            let url = serve_once(wire, piece).await;
            let mut out = Vec::new();
            get_stream(&url, "/log", None, |b| out.extend_from_slice(b))
                .await
                .unwrap();
            assert_eq!(out, b"hello, world", "pieces of {piece}");
        }
    }

    #[tokio::test]
    async fn an_error_status_carries_the_body_and_a_bad_url_is_refused() {
        let wire: &[u8] =
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot ready";
        let url = serve_once(wire, 4).await;
        let e = get(&url, "/readyz", None).await.unwrap_err();
        assert!(
            matches!(&e, ClientError::Status { status: 503, body, .. } if body == "not ready"),
            "{e}"
        );
        assert!(matches!(
            get("ftp://x", "/", None).await,
            Err(ClientError::BadUrl(_))
        ));
    }
}
