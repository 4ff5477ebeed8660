//! An in-cluster client for the service-account tests, run inside a pod (its C library
//! mounted from the host): finds the API by `KUBERNETES_SERVICE_HOST`/`_PORT`, verifies
//! its certificate against the mounted `ca.crt`, and lists the pods of its namespace
//! with the mounted token every second, printing each answer's status line (and whether
//! a PodList came back). Built only with the `test-servers` feature.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}/{name}")).unwrap_or_default()
}

fn config() -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(read("ca.crt").as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// One list: the status line, and whether the body was a PodList.
fn list(host: &str, port: &str) -> Result<String, String> {
    let ns = read("namespace");
    let server = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let conn = rustls::ClientConnection::new(config()?, server).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(format!("{host}:{port}")).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let request = format!(
        "GET /api/v1/namespaces/{ns}/pods HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        read("token").trim()
    );
    tls.write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut lines = BufReader::new(tls).lines();
    let status = lines
        .next()
        .ok_or("no answer")?
        .map_err(|e| e.to_string())?;
    let list = lines
        .map_while(Result::ok)
        .any(|l| l.contains("\"kind\":\"PodList\""));
    Ok(format!("{status} podlist={list}"))
}

fn main() {
    let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_default();
    println!("env host={host} port={port} ns={}", read("namespace"));
    loop {
        match list(&host, &port) {
            Ok(answer) => println!("answer {answer}"),
            Err(e) => println!("error {e}"),
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
