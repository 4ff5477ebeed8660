//! HTTP GET probes and hooks, from the node to the pod, as the kubelet sends them: a new
//! connection per request (`Connection: close`), `User-Agent: kube-probe/1.35` and
//! `Accept: */*` unless the probe sets them, HTTPS without certificate checks, redirects
//! followed only to the same host (at most 10), at most 10 KiB of the body read. The
//! server is the pod's, so nothing it sends is trusted: hyper parses the response (its
//! header limits apply) and the whole exchange is bounded by the caller's timeout.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::action::{HttpGet, Scheme};
use crate::outcome::{MAX_OUTPUT, Outcome, output_text};

const MAX_REDIRECTS: usize = 10;

/// `host:port`, with an IPv6 address in brackets.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Where one request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url {
    scheme: Scheme,
    host: String,
    port: u16,
    path: String,
}

impl Url {
    fn authority(&self) -> String {
        join_host_port(&self.host, self.port)
    }

    /// The next location after a redirect to `location` (absolute, or a path).
    fn follow(&self, location: &str) -> Option<Url> {
        let uri: Uri = location.parse().ok()?;
        let path = uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string());
        let Some(host) = uri.host() else {
            let path = if location.starts_with('/') {
                path
            } else {
                let dir = self.path.rsplit_once('/').map_or("", |(d, _)| d);
                format!("{dir}/{location}")
            };
            return Some(Url {
                path,
                ..self.clone()
            });
        };
        let scheme = match uri.scheme_str() {
            Some("https") => Scheme::Https,
            Some("http") | None => Scheme::Http,
            Some(_) => return None,
        };
        let port = uri.port_u16().unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
        Some(Url {
            scheme,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            path,
        })
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

/// What one exchange gave: the status and the start of the body.
struct Answer {
    status: StatusCode,
    location: Option<String>,
    body: Vec<u8>,
}

/// Why one request got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error("dial tcp {addr}: {source}")]
    Dial {
        addr: String,
        source: std::io::Error,
    },
    #[error("tls: {0}")]
    TlsName(#[from] rustls::pki_types::InvalidDnsNameError),
    #[error("tls: {0}")]
    Tls(std::io::Error),
    #[error("{0}")]
    Request(#[from] http::Error),
    #[error("invalid header name: {0}")]
    HeaderName(#[from] header::InvalidHeaderName),
    #[error("invalid header value: {0}")]
    HeaderValue(#[from] header::InvalidHeaderValue),
    #[error("{0}")]
    Exchange(#[from] hyper::Error),
}

/// Why a probe's or hook's request failed, as the kubelet words it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("Get {url:?}: {failure}")]
    Request { url: String, failure: Failure },
    #[error("Get {url:?}: stopped after {MAX_REDIRECTS} redirects")]
    Redirects { url: String },
    #[error("Get {url:?}: no answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
}

/// Runs `get` against `default_host` (the pod's IP) unless it names a host: a probe, whose
/// status code decides (2xx success, 3xx a warning, anything else a failure).
pub(crate) async fn probe(get: &HttpGet, default_host: &str, timeout: Duration) -> Outcome {
    let url = start(get, default_host);
    match tokio::time::timeout(timeout, exchange(get, url.clone())).await {
        Err(_) => Outcome::Failure(format!(
            "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            url.to_string()
        )),
        Ok(Err(e)) => Outcome::Failure(e.to_string()),
        Ok(Ok(a)) if a.status.is_success() => Outcome::Success,
        Ok(Ok(a)) if a.status.is_redirection() => Outcome::Warning(format!(
            "Probe terminated redirects, Response body: {}",
            output_text(&a.body)
        )),
        Ok(Ok(a)) => Outcome::Failure(format!(
            "HTTP probe failed with statuscode: {}",
            a.status.as_u16()
        )),
    }
}

/// The same request as a hook: any answer is success (the kubelet does not look at the
/// status code of a hook); only failing to get one fails it.
pub(crate) async fn hook(
    get: &HttpGet,
    default_host: &str,
    timeout: Duration,
) -> Result<(), HttpError> {
    let url = start(get, default_host);
    match tokio::time::timeout(timeout, exchange(get, url.clone())).await {
        Err(_) => Err(HttpError::Timeout {
            url: url.to_string(),
            timeout,
        }),
        Ok(r) => r.map(|_| ()),
    }
}

fn start(get: &HttpGet, default_host: &str) -> Url {
    Url {
        scheme: get.scheme,
        host: get.host.clone().unwrap_or_else(|| default_host.to_string()),
        port: get.port,
        path: get.path.clone(),
    }
}

/// The request and the redirects it leads to on its own host.
async fn exchange(get: &HttpGet, first: Url) -> Result<Answer, HttpError> {
    let mut url = first.clone();
    for _ in 0..=MAX_REDIRECTS {
        let answer = request(get, &url)
            .await
            .map_err(|failure| HttpError::Request {
                url: url.to_string(),
                failure,
            })?;
        let followable = matches!(answer.status.as_u16(), 301 | 302 | 303 | 307 | 308);
        let next = answer
            .location
            .as_deref()
            .filter(|_| followable)
            .and_then(|l| url.follow(l));
        match next {
            Some(n) if followable_to(&first, &n) => url = n,
            _ => return Ok(answer),
        }
    }
    Err(HttpError::Redirects {
        url: url.to_string(),
    })
}

/// Whether a redirect from `first` leads on to `next`: the same host only, as the kubelet
/// follows; and on a loopback host, the same port too: a probe's server may not send the
/// node to its other loopback services (the debug endpoint, the runtime's streams), which
/// trust loopback callers.
fn followable_to(first: &Url, next: &Url) -> bool {
    let loopback = |h: &str| {
        h.eq_ignore_ascii_case("localhost")
            || h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    next.host == first.host && (next.port == first.port || !loopback(&next.host))
}

fn build(get: &HttpGet, url: &Url) -> Result<Request<Empty<Bytes>>, Failure> {
    let mut req = Request::get(url.path.as_str()).body(Empty::new())?;
    let headers = req.headers_mut();
    for (name, value) in &get.headers {
        let name = header::HeaderName::from_bytes(name.as_bytes())?;
        headers.append(name, HeaderValue::from_str(value)?);
    }
    if !headers.contains_key(header::HOST) {
        headers.insert(header::HOST, HeaderValue::from_str(&url.authority())?);
    }
    if !headers.contains_key(header::USER_AGENT) {
        let agent = HeaderValue::from_static(podvisor_core::version::PROBE_USER_AGENT);
        headers.insert(header::USER_AGENT, agent);
    }
    match headers.get(header::ACCEPT) {
        None => {
            headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        Some(v) if v.is_empty() => {
            headers.remove(header::ACCEPT);
        }
        Some(_) => {}
    }
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    Ok(req)
}

/// One request over a new connection.
async fn request(get: &HttpGet, url: &Url) -> Result<Answer, Failure> {
    let req = build(get, url)?;
    let addr = url.authority();
    let tcp = TcpStream::connect(&addr)
        .await
        .map_err(|source| Failure::Dial { addr, source })?;
    match url.scheme {
        Scheme::Http => send(tcp, req).await,
        Scheme::Https => {
            let name = rustls::pki_types::ServerName::try_from(url.host.clone())?;
            let tls = tokio_rustls::TlsConnector::from(tls_config())
                .connect(name, tcp)
                .await
                .map_err(Failure::Tls)?;
            send(tls, req).await
        }
    }
}

async fn send<S>(io: S, req: Request<Empty<Bytes>>) -> Result<Answer, Failure>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let exchange = async {
        let resp = sender.send_request(req).await?;
        let status = resp.status();
        let location = resp
            .headers()
            .get(header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(String::from);
        let body = read_body(resp.into_body()).await;
        Ok(Answer {
            status,
            location,
            body,
        })
    };
    // The connection is driven beside the exchange, in this future: no task is left behind.
    // It ends on its own once the answer is in (`Connection: close`): the exchange then
    // still has it to take.
    tokio::pin!(conn, exchange);
    tokio::select! {
        biased;
        answer = &mut exchange => answer,
        r = &mut conn => match r {
            Ok(()) => exchange.await,
            Err(e) => Err(e.into()),
        },
    }
}

/// At most [`MAX_OUTPUT`] bytes of the body; the rest is never read.
async fn read_body(mut body: Incoming) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < MAX_OUTPUT {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = MAX_OUTPUT - out.len();
                    out.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            _ => break,
        }
    }
    out
}

/// HTTPS without certificate checks, as the kubelet probes (`InsecureSkipVerify`).
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Accepts any server certificate; signatures are still checked against the certificate
/// the server sent, so the connection is encrypted, only not authenticated.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
