//! Exec, Attach and PortForward: each asks the runtime to prepare one streaming session
//! and answers the URL of the runtime's stream server that serves it.

use super::CriClient;
use crate::error::CriError;
use crate::model::StreamRequest;
use crate::proto::*;

impl CriClient {
    /// The runtime's URL for one session (single use; the runtime forgets it soon).
    pub async fn stream_url(&self, request: &StreamRequest) -> Result<String, CriError> {
        let limit = self.timeouts.call;
        match request.clone() {
            StreamRequest::Exec {
                container_id,
                cmd,
                io,
            } => {
                let req = ExecRequest {
                    container_id,
                    cmd,
                    tty: io.tty,
                    stdin: io.stdin,
                    stdout: io.stdout,
                    stderr: io.stderr,
                };
                let r = self.unary("Exec", limit, call!(self.runtime, exec, req));
                r.await.map(|r| r.url)
            }
            StreamRequest::Attach { container_id, io } => {
                let req = AttachRequest {
                    container_id,
                    stdin: io.stdin,
                    tty: io.tty,
                    stdout: io.stdout,
                    stderr: io.stderr,
                };
                let r = self.unary("Attach", limit, call!(self.runtime, attach, req));
                r.await.map(|r| r.url)
            }
            StreamRequest::PortForward { sandbox_id, ports } => {
                let req = PortForwardRequest {
                    pod_sandbox_id: sandbox_id,
                    port: ports.into_iter().map(i32::from).collect(),
                };
                let r = self.unary("PortForward", limit, call!(self.runtime, port_forward, req));
                r.await.map(|r| r.url)
            }
        }
    }
}
