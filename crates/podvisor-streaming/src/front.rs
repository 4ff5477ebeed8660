//! A listener for an actix app that also serves streaming sessions. TLS first, then
//! HTTP/2 or HTTP/1.1 by ALPN, both served by the app; but an HTTP/1.1 connection's first
//! request is read here, and if the [`Gate`] takes it (an upgrade to exec, attach or
//! port-forward) the connection becomes its session. actix-web switches protocols only to
//! WebSocket, and kubectl and the API server stream over SPDY, so sessions bypass it.
//! Clients dial a fresh connection for every session (client-go always does), so the first
//! request is the one to look at; a later upgrade on a reused connection goes to the app.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use actix_http::Protocol;
use actix_service::Service;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tracing::{debug, warn};

use crate::head::{RequestHead, Sniffed, read_request};
use crate::reply::refuse;
use crate::rewind::Rewind;
pub use crate::slots::Limits;
use crate::slots::{Admitted, Slots};

/// A connection as the gate sees it (its peer's certificates are there).
pub type TlsConn = TlsStream<TcpStream>;
/// A connection as the app sees it.
pub type Conn = Rewind<TlsConn>;

/// What takes a connection whose first request is a streaming session.
pub trait Gate: 'static {
    type Route;
    /// The session `head` asks for; `None` hands the connection to the app.
    fn route(&self, head: &RequestHead) -> Option<Self::Route>;
    /// Serves the session, or answers why not.
    fn serve(
        &self,
        io: TlsConn,
        sniffed: Sniffed,
        route: Self::Route,
    ) -> impl std::future::Future<Output = ()>;
}

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client may take, after its handshake, to send its first request: an
/// HTTP/1.1 request head, or an HTTP/2 stream (a client that only answers pings holds
/// nothing longer).
const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The ALPN protocols offered, preferred first.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Accepts until `stop` turns true; every connection ends with it. Runs on an actix
/// runtime (the app is not `Send`).
pub async fn serve<S, G>(
    listener: TcpListener,
    (tls, limits): (TlsAcceptor, Limits),
    app: Rc<S>,
    gate: Rc<G>,
    stop: watch::Receiver<bool>,
) where
    S: Service<(Conn, Protocol, Option<SocketAddr>)> + 'static,
    S::Error: std::fmt::Debug,
    G: Gate,
{
    let mut stopping = stop.clone();
    let slots = Rc::new(Slots::new(limits));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopping.wait_for(|s| *s) => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(admitted) = slots.admit(peer.ip()) else {
            // Full, or this client holds its share: refused at once (closing it) rather
            // than queued without bound.
            debug!(%peer, "connection refused: no slot for this client");
            continue;
        };
        let server = (tls.clone(), app.clone(), gate.clone(), slots.clone());
        let conn = connection(tcp, peer, server, admitted);
        let mut stop = stop.clone();
        actix_rt::spawn(async move {
            tokio::select! {
                () = conn => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        });
    }
}

/// What a connection is served with.
type Server<S, G> = (TlsAcceptor, Rc<S>, Rc<G>, Rc<Slots>);

async fn connection<S, G>(
    tcp: TcpStream,
    peer: SocketAddr,
    (tls, app, gate, slots): Server<S, G>,
    admitted: Admitted,
) where
    S: Service<(Conn, Protocol, Option<SocketAddr>)>,
    S::Error: std::fmt::Debug,
    G: Gate,
{
    let _ = tcp.set_nodelay(true);
    let Ok(Ok(mut io)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await else {
        debug!(%peer, "TLS handshake failed or timed out");
        return;
    };
    let _slot = match admitted {
        Admitted::Slot(slot) => slot,
        Admitted::Trial(trial) => {
            let verified = io.get_ref().1.peer_certificates().is_some();
            let Some(slot) = slots.confirm(trial, verified) else {
                debug!(%peer, "connection refused: no slot, and no verified certificate");
                return;
            };
            slot
        }
    };
    if io.get_ref().1.alpn_protocol() == Some(b"h2") {
        let (conn, seen) = Rewind::watched(io);
        let served = app.call((conn, Protocol::Http2, Some(peer)));
        tokio::pin!(served);
        tokio::select! {
            r = &mut served => return log_end(peer, r),
            () = tokio::time::sleep(FIRST_REQUEST_TIMEOUT) => {}
        }
        if !seen.get() {
            debug!(%peer, "HTTP/2 connection closed: no request within {FIRST_REQUEST_TIMEOUT:?}");
            return;
        }
        return log_end(peer, served.await);
    }
    let first = tokio::time::timeout(FIRST_REQUEST_TIMEOUT, read_request(&mut io));
    let sniffed = match first.await {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) | Err(_) => return,
        Ok(Err(e)) => {
            let _ = refuse(&mut io, &e).await;
            return;
        }
    };
    if let Some(route) = gate.route(&sniffed.head) {
        gate.serve(io, sniffed, route).await;
        return;
    }
    let conn = Rewind::new(io, sniffed.raw);
    log_end(peer, app.call((conn, Protocol::Http1, Some(peer))).await);
}

fn log_end<E: std::fmt::Debug>(peer: SocketAddr, r: Result<impl Sized, E>) {
    if let Err(e) = r {
        debug!(%peer, error = ?e, "connection ended with an error");
    }
}

/// A server running on a thread of its own: stops on [`Served::stop`].
pub struct Served {
    pub address: SocketAddr,
    stop: watch::Sender<bool>,
    finished: std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl Served {
    /// Stops accepting and closes every connection.
    pub async fn stop(&self) {
        let _ = self.stop.send(true);
        let finished = self.finished.lock().ok().and_then(|mut f| f.take());
        if let Some(finished) = finished {
            let _ = finished.await;
        }
    }
}

/// What a connection tells the app before its first request (a client certificate's
/// identity, say).
pub type OnConnect = fn(&Conn, &mut actix_http::Extensions);

/// Serves `app` (made on the server's thread) and `gate` on `listener` with `tls`, on a
/// thread named `name` with an actix runtime of its own (the agent's actors keep theirs),
/// holding connections within the default [`Limits`].
pub fn spawn<F, A, SF, B, G>(
    name: &str,
    listener: std::net::TcpListener,
    tls: rustls::ServerConfig,
    parts: (F, G, OnConnect),
) -> std::io::Result<Served>
where
    F: FnOnce() -> A + Send + 'static,
    A: actix_service::IntoServiceFactory<SF, actix_http::Request>,
    SF: actix_service::ServiceFactory<
            actix_http::Request,
            Config = actix_web::dev::AppConfig,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: actix_web::body::MessageBody + 'static,
    G: Gate + Send,
{
    spawn_within(name, listener, (tls, Limits::default()), parts)
}

/// As [`spawn`], within `limits`.
pub fn spawn_within<F, A, SF, B, G>(
    name: &str,
    listener: std::net::TcpListener,
    (tls, limits): (rustls::ServerConfig, Limits),
    (app, gate, on_connect): (F, G, OnConnect),
) -> std::io::Result<Served>
where
    F: FnOnce() -> A + Send + 'static,
    A: actix_service::IntoServiceFactory<SF, actix_http::Request>,
    SF: actix_service::ServiceFactory<
            actix_http::Request,
            Config = actix_web::dev::AppConfig,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: actix_web::body::MessageBody + 'static,
    G: Gate + Send,
{
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let (stop, stopping) = watch::channel(false);
    let (done, finished) = tokio::sync::oneshot::channel();
    let acceptor = TlsAcceptor::from(std::sync::Arc::new(tls));
    let label = name.to_string();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return warn!(server = label, error = %e, "cannot listen"),
                };
                let factory = actix_http::HttpService::build()
                    // actix-web's HttpServer defaults: a second to finish a response to a
                    // client still sending (a refused oversized body) before closing.
                    .client_request_timeout(Duration::from_secs(5))
                    .client_disconnect_timeout(Duration::from_secs(1))
                    .on_connect_ext(on_connect)
                    .finish(actix_service::map_config(app(), |_| {
                        actix_web::dev::AppConfig::default()
                    }));
                match actix_service::ServiceFactory::new_service(&factory, ()).await {
                    Ok(svc) => {
                        let tls = (acceptor, limits);
                        serve(listener, tls, Rc::new(svc), Rc::new(gate), stopping).await
                    }
                    Err(e) => warn!(server = label, error = ?e, "cannot build the app"),
                }
            });
            let _ = done.send(());
        })?;
    Ok(Served {
        address,
        stop,
        finished: std::sync::Mutex::new(Some(finished)),
    })
}
