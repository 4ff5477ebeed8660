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

/// How long a client may take to finish its TLS handshake or its first request head.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The ALPN protocols offered, preferred first.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Accepts until `stop` turns true; every connection ends with it. Runs on an actix
/// runtime (the app is not `Send`).
pub async fn serve<S, G>(
    listener: TcpListener,
    tls: TlsAcceptor,
    app: Rc<S>,
    gate: Rc<G>,
    stop: watch::Receiver<bool>,
) where
    S: Service<(Conn, Protocol, Option<SocketAddr>)> + 'static,
    S::Error: std::fmt::Debug,
    G: Gate,
{
    let mut stopping = stop.clone();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopping.wait_for(|s| *s) => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "API: cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let conn = connection(tcp, peer, tls.clone(), app.clone(), gate.clone());
        let mut stop = stop.clone();
        actix_rt::spawn(async move {
            tokio::select! {
                () = conn => {}
                _ = stop.wait_for(|s| *s) => {}
            }
        });
    }
}

async fn connection<S, G>(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: TlsAcceptor,
    app: Rc<S>,
    gate: Rc<G>,
) where
    S: Service<(Conn, Protocol, Option<SocketAddr>)>,
    S::Error: std::fmt::Debug,
    G: Gate,
{
    let _ = tcp.set_nodelay(true);
    let Ok(Ok(mut io)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await else {
        debug!(%peer, "API: TLS handshake failed or timed out");
        return;
    };
    if io.get_ref().1.alpn_protocol() == Some(b"h2") {
        let r = app.call((
            Rewind::new(io, Default::default()),
            Protocol::Http2,
            Some(peer),
        ));
        log_end(peer, r.await);
        return;
    }
    let sniffed = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_request(&mut io)).await {
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
        debug!(%peer, error = ?e, "API: connection ended with an error");
    }
}
