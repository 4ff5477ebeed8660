//! gRPC probes: the standard health service (`grpc.health.v1.Health/Check`) on the pod's
//! port, in plain text, as the kubelet asks it; `SERVING` is success. The connection and
//! the call share the probe's timeout.

use std::time::Duration;

use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::outcome::Outcome;

pub(crate) async fn grpc(host: &str, port: u16, service: &str, timeout: Duration) -> Outcome {
    let addr = crate::http::join_host_port(host, port);
    match tokio::time::timeout(timeout, check(&addr, service)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Failure(format!(
            "timeout: health rpc did not complete within {}",
            crate::exec::seconds(timeout)
        )),
    }
}

async fn check(addr: &str, service: &str) -> Outcome {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .and_then(|e| e.user_agent(podvisor_core::version::PROBE_USER_AGENT));
    let endpoint = match endpoint {
        Ok(e) => e,
        Err(e) => return Outcome::Failure(format!("error: bad address {addr:?}: {e}")),
    };
    let channel = match endpoint.connect().await {
        Ok(c) => c,
        Err(e) => {
            return Outcome::Failure(format!("error: failed to connect service at {addr:?}: {e}"));
        }
    };
    let request = HealthCheckRequest {
        service: service.to_string(),
    };
    match HealthClient::new(channel).check(request).await {
        Ok(r) => match r.into_inner().status() {
            ServingStatus::Serving => Outcome::Success,
            other => Outcome::Failure(format!(
                "service unhealthy (responded with {:?})",
                other.as_str_name()
            )),
        },
        Err(s) if s.code() == tonic::Code::Unimplemented => Outcome::Failure(format!(
            "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {}",
            s.message()
        )),
        Err(s) => Outcome::Failure(format!("error: health rpc probe failed: {s}")),
    }
}
