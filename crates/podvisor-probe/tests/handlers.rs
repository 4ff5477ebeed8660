//! The probe handlers against real servers on loopback: HTTP (status codes, redirects,
//! headers, a slow or huge answer, HTTPS with a self-signed certificate), TCP, the gRPC
//! health service, and hooks.

use std::sync::Arc;
use std::time::Duration;

use podvisor_cri::FakeRuntime;
use podvisor_probe::{Action, HttpGet, Outcome, Scheme, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const SECOND: Duration = Duration::from_secs(1);

/// An HTTP server answering each request with `answer(path)`, reporting each request's
/// head on the channel.
async fn http_server(answer: fn(&str) -> String) -> (u16, mpsc::UnboundedReceiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                let _ = tx.send(head);
                let _ = s.write_all(answer(&path).as_bytes()).await;
            });
        }
    });
    (port, rx)
}

fn target() -> Target {
    Target {
        runtime: Arc::new(FakeRuntime::new()),
        container_id: "c".into(),
        pod_ip: "127.0.0.1".into(),
    }
}

fn get(port: u16, path: &str) -> Action {
    Action::HttpGet(HttpGet {
        scheme: Scheme::Http,
        host: None,
        port,
        path: path.into(),
        headers: vec![("X-Probe".into(), "yes".into())],
    })
}

fn reply(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
}

fn routes(path: &str) -> String {
    match path {
        "/ok" => reply("200 OK", "", "fine"),
        "/fail" => reply("500 Internal Server Error", "", "secret-body"),
        "/moved" => reply("302 Found", "Location: /ok\r\n", ""),
        "/away" => reply("301 Moved", "Location: http://10.255.255.1:9/x\r\n", "gone"),
        "/loop" => reply("302 Found", "Location: /loop\r\n", ""),
        _ => reply("404 Not Found", "", ""),
    }
}

#[tokio::test]
async fn http_probes_judge_by_status_follow_only_local_redirects_and_send_kubelet_headers() {
    let (port, mut heads) = http_server(routes).await;
    let t = target();
    let probe = |path: &str| podvisor_probe::run::probe(get(port, path), t.clone(), SECOND);
    assert_eq!(probe("/ok").await, Outcome::Success);
    let head = heads.recv().await.unwrap();
    for h in [
        "GET /ok HTTP/1.1",
        "user-agent: kube-probe/1.37",
        "accept: */*",
        "x-probe: yes",
        &format!("host: 127.0.0.1:{port}"),
        "connection: close",
    ] {
        assert!(
            head.to_lowercase().contains(&h.to_lowercase()),
            "{h:?} not in {head}"
        );
    }
    assert_eq!(
        probe("/fail").await,
        Outcome::Failure("HTTP probe failed with statuscode: 500".into()),
        "the body is not in the message"
    );
    assert_eq!(probe("/moved").await, Outcome::Success, "followed to /ok");
    assert_eq!(
        probe("/away").await,
        Outcome::Warning("Probe terminated redirects, Response body: gone".into())
    );
    let Outcome::Failure(m) = probe("/loop").await else {
        panic!("a redirect loop fails")
    };
    assert!(m.contains("stopped after 10 redirects"), "{m}");
}

/// A pod's server on the node's loopback (a host-network pod, a probe `host` a static pod
/// may set) redirecting the probe to another loopback port: to the agent's debug endpoint,
/// say, which trusts loopback callers. The node does not go there.
#[tokio::test]
async fn a_redirect_to_another_port_of_the_loopback_is_not_followed() {
    let inner = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let inner_port = inner.local_addr().unwrap().port();
    let (reached, mut reached_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = inner.accept().await {
            let _ = reached.send(());
            let _ = s
                .write_all(reply("200 OK", "", "{\"actors\": []}").as_bytes())
                .await;
        }
    });
    let outer = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let outer_port = outer.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = outer.accept().await {
            let mut buf = vec![0; 4096];
            let _ = s.read(&mut buf).await;
            let to = format!("Location: http://127.0.0.1:{inner_port}/debug/actors\r\n");
            let _ = s
                .write_all(reply("302 Found", &to, "elsewhere").as_bytes())
                .await;
        }
    });
    let r = podvisor_probe::run::probe(get(outer_port, "/"), target(), SECOND).await;
    assert_eq!(
        r,
        Outcome::Warning("Probe terminated redirects, Response body: elsewhere".into())
    );
    assert!(
        reached_rx.try_recv().is_err(),
        "the probe reached the other loopback port"
    );
}

#[tokio::test]
async fn a_slow_or_absent_server_fails_within_the_timeout_and_a_huge_body_is_not_read() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let slow = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut kept = Vec::new();
        loop {
            let (s, _) = l.accept().await.unwrap();
            kept.push(s); // never answers
        }
    });
    let t0 = tokio::time::Instant::now();
    let r = podvisor_probe::run::probe(get(slow, "/"), target(), SECOND).await;
    assert!(
        matches!(&r, Outcome::Failure(m) if m.contains("Client.Timeout")),
        "{r:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = podvisor_probe::run::probe(get(closed, "/"), target(), SECOND).await;
    assert!(
        matches!(&r, Outcome::Failure(m) if m.contains("refused")),
        "{r:?}"
    );

    // A pod that answers 3xx with an endless body: the probe reads 10 KiB and stops.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let huge = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = [0; 1024];
        let _ = s.read(&mut buf).await;
        let _ = s
            .write_all(b"HTTP/1.1 302 Found\r\nLocation: http://192.0.2.1/\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
        while s.write_all(chunk.as_bytes()).await.is_ok() {}
    });
    let r = podvisor_probe::run::probe(get(huge, "/"), target(), SECOND).await;
    let Outcome::Warning(m) = r else {
        panic!("a 3xx is a warning: {r:?}")
    };
    assert!(m.len() < 10 * 1024 + 100, "read {} bytes", m.len());
}

#[tokio::test]
async fn https_probes_do_not_check_the_certificate() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["somewhere.invalid".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        let mut tls = acceptor.accept(s).await.unwrap();
        let mut buf = [0; 1024];
        let _ = tls.read(&mut buf).await;
        let _ = tls.write_all(reply("200 OK", "", "ok").as_bytes()).await;
        let _ = tls.shutdown().await;
    });
    let Action::HttpGet(mut g) = get(port, "/") else {
        unreachable!()
    };
    g.scheme = Scheme::Https;
    let r = podvisor_probe::run::probe(Action::HttpGet(g), target(), SECOND).await;
    assert_eq!(r, Outcome::Success);
}

#[tokio::test]
async fn tcp_probes_connect_and_http_hooks_ignore_the_status() {
    let (port, _heads) = http_server(routes).await;
    let tcp = |port| Action::Tcp { host: None, port };
    let r = podvisor_probe::run::probe(tcp(port), target(), SECOND).await;
    assert_eq!(r, Outcome::Success);
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = podvisor_probe::run::probe(tcp(closed), target(), SECOND).await;
    assert!(
        matches!(&r, Outcome::Failure(m) if m.starts_with("dial tcp 127.0.0.1:")),
        "{r:?}"
    );
    // A hook is done once it has an answer, whatever its status (the kubelet's rule).
    let t = target();
    podvisor_probe::run::hook(&get(port, "/fail"), &t, "app", "default/web", Some(SECOND))
        .await
        .unwrap();
    let e = podvisor_probe::run::hook(&get(closed, "/"), &t, "app", "default/web", Some(SECOND))
        .await
        .unwrap_err();
    assert!(
        e.0.starts_with("HTTP lifecycle hook (/) for Container \"app\""),
        "{e}"
    );
}

#[tokio::test]
async fn grpc_probes_ask_the_standard_health_service() {
    let (reporter, service) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("app", tonic_health::ServingStatus::Serving)
        .await;
    reporter
        .set_service_status("db", tonic_health::ServingStatus::NotServing)
        .await;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l)),
    );
    let grpc = |service: &str| Action::Grpc {
        port,
        service: service.into(),
    };
    let r = podvisor_probe::run::probe(grpc("app"), target(), SECOND).await;
    assert_eq!(r, Outcome::Success);
    let r = podvisor_probe::run::probe(grpc("db"), target(), SECOND).await;
    assert_eq!(
        r,
        Outcome::Failure("service unhealthy (responded with \"NOT_SERVING\")".into())
    );
    let r = podvisor_probe::run::probe(grpc("nope"), target(), SECOND).await;
    assert!(
        matches!(&r, Outcome::Failure(m) if m.contains("health rpc probe failed")),
        "{r:?}"
    );
    // Not a gRPC server at all.
    let (http, _) = http_server(routes).await;
    let r = podvisor_probe::run::probe(
        Action::Grpc {
            port: http,
            service: String::new(),
        },
        target(),
        SECOND,
    )
    .await;
    assert!(matches!(r, Outcome::Failure(_)), "{r:?}");
}
