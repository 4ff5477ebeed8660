//! TCP probes: connecting within the timeout is success; nothing is sent.

use std::time::Duration;

use tokio::net::TcpStream;

use crate::outcome::Outcome;

pub(crate) async fn tcp(host: &str, port: u16, timeout: Duration) -> Outcome {
    let addr = crate::http::join_host_port(host, port);
    match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
        Ok(Ok(_)) => Outcome::Success,
        Ok(Err(e)) => Outcome::Failure(format!("dial tcp {addr}: {e}")),
        Err(_) => Outcome::Failure(format!("dial tcp {addr}: i/o timeout")),
    }
}
