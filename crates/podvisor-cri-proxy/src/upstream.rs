//! The proxy's side toward the runtime: one HTTP/2 connection over its unix socket, made
//! again when the runtime went away (a restarted containerd is a new connection).

use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::UnixStream;
use tokio::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    #[error("cannot connect to the runtime at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("HTTP/2 with the runtime: {0}")]
    Http(#[from] hyper::Error),
}

pub(crate) struct Upstream {
    path: PathBuf,
    conn: Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl Upstream {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            conn: Mutex::new(None),
        }
    }

    /// Sends one request, connecting first if there is no live connection.
    pub(crate) async fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut sender = self.sender().await?;
        sender.ready().await?;
        Ok(sender.send_request(req).await?)
    }

    async fn sender(&self) -> Result<SendRequest<Full<Bytes>>, UpstreamError> {
        let mut conn = self.conn.lock().await;
        if let Some(s) = conn.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let stream =
            UnixStream::connect(&self.path)
                .await
                .map_err(|source| UpstreamError::Connect {
                    path: self.path.display().to_string(),
                    source,
                })?;
        let (sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "cri-proxy: connection to the runtime ended");
            }
        });
        *conn = Some(sender.clone());
        Ok(sender)
    }
}
