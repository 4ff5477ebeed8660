//! The listener's connection slots against real sockets: when anonymous clients have
//! filled the common pool, a client whose certificate the server verifies (the cluster's
//! kube-apiserver, on a node's :10250) still gets in; an anonymous one does not.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{App, HttpResponse, web};
use podvisor_streaming::front::{self, Gate, Limits, TlsConn};
use podvisor_streaming::{RequestHead, Sniffed};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

struct NoSessions;

impl Gate for NoSessions {
    type Route = ();
    fn route(&self, _: &RequestHead) -> Option<()> {
        None
    }
    async fn serve(&self, _: TlsConn, _: Sniffed, (): ()) {}
}

type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

struct Pki {
    ca: CertificateDer<'static>,
    server: Chain,
    client: Chain,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| -> Chain {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap();
        (vec![cert.der().clone()], key)
    };
    Pki {
        ca: ca.der().clone(),
        server: leaf(vec!["127.0.0.1".into()]),
        client: leaf(vec!["kube-apiserver".into()]),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(p: &Pki) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(p.ca.clone()).unwrap();
    roots
}

fn server_tls(p: &Pki) -> rustls::ServerConfig {
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(p).into(), provider())
            .allow_unauthenticated()
            .build()
            .unwrap();
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(p.server.0.clone(), p.server.1.clone_key())
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    cfg
}

fn client_tls(p: &Pki, with_cert: bool) -> tokio_rustls::TlsConnector {
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(p));
    let cfg = match with_cert {
        true => b
            .with_client_auth_cert(p.client.0.clone(), p.client.1.clone_key())
            .unwrap(),
        false => b.with_no_client_auth(),
    };
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
}

async fn connect_from(last: u8, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(([127, 0, 0, last], 0).into()).unwrap();
    s.connect(to).await.unwrap()
}

/// GET /healthz over TLS from 127.0.0.`last`: the answer's first line, or why none.
async fn healthz(p: &Pki, last: u8, to: SocketAddr, with_cert: bool) -> String {
    let tcp = connect_from(last, to).await;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = match client_tls(p, with_cert).connect(name, tcp).await {
        Ok(t) => t,
        Err(e) => return format!("handshake: {e}"),
    };
    let ask = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if let Err(e) = tls.write_all(ask).await {
        return format!("write: {e}");
    }
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut out)).await;
    match read {
        Ok(_) => String::from_utf8_lossy(&out)
            .lines()
            .next()
            .unwrap_or("closed")
            .to_string(),
        Err(_) => "no answer".into(),
    }
}

#[actix_rt::test]
async fn a_verified_client_gets_in_when_anonymous_ones_filled_the_pool() {
    let p = pki();
    let limits = Limits {
        total: 24,
        reserved: 4,
        per_client: 5,
        trials: 4,
        trials_per_client: 1,
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let app = || {
        App::new().route(
            "/healthz",
            web::get().to(|| async { HttpResponse::Ok().body("ok") }),
        )
    };
    let tls = (server_tls(&p), limits);
    let served = front::spawn_within("t", listener, tls, (app, NoSessions, |_, _| {})).unwrap();
    let to = served.address;
    // Four addresses of five connections each take the 20 common slots and never
    // handshake.
    let mut flood = Vec::new();
    for last in 2..6 {
        for _ in 0..5 {
            flood.push(connect_from(last, to).await);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        healthz(&p, 9, to, true).await,
        "HTTP/1.1 200 OK",
        "verified: the reserve"
    );
    let anonymous = healthz(&p, 10, to, false).await;
    assert!(
        !anonymous.starts_with("HTTP/1.1 200"),
        "anonymous: {anonymous}"
    );
    drop(flood);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        healthz(&p, 10, to, false).await,
        "HTTP/1.1 200 OK",
        "the pool freed"
    );
    served.stop().await;
}
