//! A gRPC health server for the probe tests, run inside a pod (its libraries mounted from
//! the host): serves `grpc.health.v1.Health` on the port given, SERVING while the file
//! given exists and NOT_SERVING otherwise. Built only with the `test-servers` feature.

use std::path::PathBuf;
use std::time::Duration;

use tonic_health::ServingStatus;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args
        .next()
        .and_then(|p| p.parse().ok())
        .expect("usage: podvisor-test-grpc PORT HEALTHY_FILE");
    let healthy = PathBuf::from(
        args.next()
            .expect("usage: podvisor-test-grpc PORT HEALTHY_FILE"),
    );
    let (reporter, service) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        loop {
            let status = if healthy.exists() {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            };
            reporter.set_service_status("", status).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    tonic::transport::Server::builder()
        .add_service(service)
        .serve(([0, 0, 0, 0], port).into())
        .await
        .expect("serving");
}
