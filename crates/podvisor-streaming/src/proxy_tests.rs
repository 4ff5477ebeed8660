use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};
use tokio::net::TcpListener;

use super::*;
use crate::head::read_request;

const HEAD: &[u8] = b"POST /api/v1/namespaces/d/pods/p/exec?command=cat&stdin=true HTTP/1.1\r\nHost: node:6443\r\nAuthorization: Bearer secret\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n";

/// A stream server that answers `answer`, then echoes; hands back the head it got.
async fn server(answer: &'static [u8]) -> (String, tokio::task::JoinHandle<RequestHead>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/exec/tok3n", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let sniffed = read_request(&mut conn).await.unwrap().unwrap();
        let (head, rest) = (sniffed.head.clone(), sniffed.rest());
        conn.write_all(answer).await.unwrap();
        conn.write_all(&rest).await.unwrap();
        let mut buf = [0u8; 1024];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => conn.write_all(&buf[..n]).await.unwrap(),
            }
        }
        head
    });
    (url, task)
}

fn head() -> RequestHead {
    let (h, _) = futures_free_parse(HEAD);
    h
}

fn futures_free_parse(raw: &[u8]) -> (RequestHead, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut r = raw;
    let sniffed = rt.block_on(read_request(&mut r)).unwrap().unwrap();
    (sniffed.head.clone(), sniffed.rest().len())
}

#[tokio::test]
async fn an_upgrade_flows_both_ways_and_credentials_stay_here() {
    let (url, server) = server(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n").await;
    let head = std::thread::spawn(head).join().unwrap();
    let (mut client, ours) = duplex(64);
    let session = tokio::spawn(async move {
        proxy(
            ours,
            &head,
            Bytes::from_static(b"early"),
            &url,
            Duration::from_secs(3600),
        )
        .await
    });
    let mut answer = vec![0u8; 0];
    let mut buf = [0u8; 256];
    while !answer.ends_with(b"\r\n\r\nearly") {
        let n = client.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 101 "));
    client.write_all(b"ping").await.unwrap();
    let mut four = [0u8; 4];
    client.read_exact(&mut four).await.unwrap();
    assert_eq!(&four, b"ping");
    drop(client);
    session.await.unwrap().unwrap();
    let seen = server.await.unwrap();
    assert_eq!(seen.target, "/exec/tok3n?command=cat&stdin=true");
    assert_eq!(seen.header("authorization"), None);
    assert!(seen.header("host").unwrap().starts_with("127.0.0.1:"));
    let versions = seen
        .headers
        .iter()
        .filter(|(n, _)| n == "X-Stream-Protocol-Version");
    assert_eq!(versions.count(), 2, "every offered protocol goes on");
}

#[tokio::test]
async fn a_refusal_comes_back_as_it_was_and_ends() {
    let (url, _server) =
        server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno\n")
            .await;
    let head = std::thread::spawn(head).join().unwrap();
    let (mut client, ours) = duplex(1024);
    let session = tokio::spawn(async move {
        proxy(ours, &head, Bytes::new(), &url, Duration::from_secs(3600)).await
    });
    let mut text = Vec::new();
    let mut buf = [0u8; 256];
    while !text.ends_with(b"no\n") {
        let n = client.read(&mut buf).await.unwrap();
        assert!(n > 0);
        text.extend_from_slice(&buf[..n]);
    }
    assert!(text.starts_with(b"HTTP/1.1 400 "));
    drop(client);
    let r = tokio::time::timeout(Duration::from_secs(5), session).await;
    assert!(r.is_ok(), "the session ended with the refusal");
}

#[tokio::test(start_paused = true)]
async fn a_silent_session_is_closed_after_the_idle_limit() {
    let (url, _server) = server(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n",
    )
    .await;
    let head = std::thread::spawn(head).join().unwrap();
    let (_client, ours) = duplex(1024);
    let started = tokio::time::Instant::now();
    proxy(ours, &head, Bytes::new(), &url, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(30));
}

#[tokio::test]
async fn an_unreachable_or_foreign_url_is_an_upstream_error() {
    let head = std::thread::spawn(head).join().unwrap();
    let (_c, ours) = duplex(64);
    let r = proxy(
        ours,
        &head,
        Bytes::new(),
        "https://127.0.0.1:1/x",
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(r.unwrap_err().code(), 502);
    let (_c, ours) = duplex(64);
    let r = proxy(
        ours,
        &head,
        Bytes::new(),
        "http://127.0.0.1:1/x",
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(r.unwrap_err().code(), 502);
}
