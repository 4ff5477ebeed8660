//! The node's streaming sessions: finds the container (or the pod's sandbox) a session is
//! for in the runtime, asks the runtime to prepare it, and proxies the client to it, with
//! a bound on sessions at once.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use podvisor_cri::{
    ContainerState, ContainerStatus, PodStatus, Runtime, SandboxState, StreamRequest,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::StreamError;
use crate::head::RequestHead;
use crate::proxy::proxy;
use crate::session::Session;

/// The bounds every session lives within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Sessions open at once; one more is answered 429.
    pub max_sessions: usize,
    /// A session with no traffic either way for this long is closed (the kubelet's
    /// `streamingConnectionIdleTimeout`, 4 h by default).
    pub idle_timeout: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_sessions: 64,
            idle_timeout: Duration::from_secs(4 * 3600),
        }
    }
}

/// The pod a session is for, as the API knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTarget {
    pub namespace: String,
    pub name: String,
    /// The API object's UID: a static pod's mirror has one of its own, and the runtime
    /// knows that pod by name alone.
    pub uid: String,
}

pub struct Streams {
    runtime: Arc<dyn Runtime>,
    permits: Arc<Semaphore>,
    limits: StreamLimits,
}

impl Streams {
    pub fn new(runtime: Arc<dyn Runtime>, limits: StreamLimits) -> Streams {
        Streams {
            runtime,
            permits: Arc::new(Semaphore::new(limits.max_sessions)),
            limits,
        }
    }

    /// Serves `session` of pod `uid` on `client`, whose request `head` (and the `rest`
    /// it sent after it) asked for it. Refusals before the upgrade are returned for the
    /// caller to answer; after it, the session ends when either side closes.
    pub async fn serve<C>(
        &self,
        client: C,
        head: &RequestHead,
        rest: Bytes,
        pod: &PodTarget,
        session: &Session,
    ) -> Result<(), StreamError>
    where
        C: AsyncRead + AsyncWrite + Unpin,
    {
        let _permit = self.admit()?;
        let url = self.url(pod, session).await?;
        proxy(client, head, rest, &url, self.limits.idle_timeout).await
    }

    /// A slot for one more session, held while it lasts.
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, StreamError> {
        self.permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| StreamError::TooMany(self.limits.max_sessions))
    }

    /// Asks the runtime to prepare `session` for `pod`: its URL.
    pub async fn url(&self, pod: &PodTarget, session: &Session) -> Result<String, StreamError> {
        let status = self.status(pod).await?;
        let request = match session {
            Session::Exec { command, io, .. } => StreamRequest::Exec {
                container_id: running(&status, session.container())?,
                cmd: command.clone(),
                io: *io,
            },
            Session::Attach { io, .. } => StreamRequest::Attach {
                container_id: running(&status, session.container())?,
                io: *io,
            },
            Session::PortForward { ports } => StreamRequest::PortForward {
                sandbox_id: ready_sandbox(&status)?,
                ports: ports.clone(),
            },
        };
        Ok(self.runtime.stream_url(&request).await?)
    }

    /// What the runtime holds of `pod`: a targeted inspection by its UID when the runtime
    /// knows that UID; otherwise (a static pod seen through its mirror, or a kubelet path
    /// without a UID) the newest pod of that name, which takes a listing.
    async fn status(&self, pod: &PodTarget) -> Result<PodStatus, StreamError> {
        if !pod.uid.is_empty() {
            let status = self.runtime.pod_status(&pod.uid).await?;
            if !status.sandboxes.is_empty() {
                return Ok(status);
            }
        }
        let pods = self.runtime.list_pods().await?;
        let newest = |p: &&podvisor_cri::Pod| p.sandboxes.iter().map(|s| s.created_at).max();
        let found = pods
            .iter()
            .filter(|p| p.pod.namespace == pod.namespace && p.pod.name == pod.name)
            .max_by_key(newest)
            .ok_or_else(|| {
                StreamError::NotFound(format!(
                    "pod {}/{} has nothing running on this node",
                    pod.namespace, pod.name
                ))
            })?;
        Ok(self.runtime.pod_status(&found.pod.uid).await?)
    }

    /// Every instance the runtime keeps of container `name` of `pod`, newest first.
    pub async fn instances(
        &self,
        pod: &PodTarget,
        name: &str,
    ) -> Result<Vec<ContainerStatus>, StreamError> {
        let status = self.status(pod).await?;
        let found: Vec<ContainerStatus> = status
            .containers
            .into_iter()
            .filter(|c| c.name == name)
            .collect();
        if found.is_empty() {
            return Err(StreamError::NotFound(format!(
                "container {name:?} not found in pod {}/{}",
                pod.namespace, pod.name
            )));
        }
        Ok(found)
    }

    /// The runtime the sessions go to.
    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.runtime
    }
}

/// The running container `name` (its newest attempt).
fn running(status: &PodStatus, name: Option<&str>) -> Result<String, StreamError> {
    let name = name.ok_or_else(|| StreamError::BadRequest("no container named".into()))?;
    status
        .containers
        .iter()
        .find(|c| c.name == name && c.state == ContainerState::Running)
        .map(|c| c.id.clone())
        .ok_or_else(|| {
            StreamError::NotFound(format!("container {name:?} is not running in this pod"))
        })
}

/// The pod's ready sandbox.
fn ready_sandbox(status: &PodStatus) -> Result<String, StreamError> {
    status
        .sandboxes
        .iter()
        .find(|s| s.state == SandboxState::Ready)
        .map(|s| s.id.clone())
        .ok_or_else(|| StreamError::NotFound("the pod has no running sandbox".into()))
}

#[cfg(test)]
#[path = "streams_tests.rs"]
mod tests;
