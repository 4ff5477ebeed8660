//! The CRI gRPC client: one HTTP/2 channel over the runtime's unix socket, shared by every
//! call. The channel connects lazily and reconnects on its own, so a runtime that restarts
//! costs podvisor at most the calls that were in flight when it went away.

use std::future::Future;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Uri};

use crate::endpoint::Endpoint;
use crate::error::CriError;
use crate::observe::Observer;
use crate::proto::image_service_client::ImageServiceClient;
use crate::proto::runtime_service_client::RuntimeServiceClient;
use crate::proto::*;

/// One call on a cloned client handle (it shares the channel), as an owned future whose
/// gRPC state (60 KiB) is boxed as it starts: a call waiting for its turn is small.
macro_rules! call {
    ($svc:expr, $method:ident, $req:expr) => {{
        let mut svc = $svc.clone();
        let req = $req;
        async move { Box::pin(svc.$method(req)).await }
    }};
}

// After the macro: its modules use it.
mod flow;
mod gate;
mod images;
pub(crate) mod listing;
mod resources;
mod runtime_config;
mod stats;
mod streams;

pub use flow::{MUTATIONS, STOP_HOLD, default_mutations};
pub use listing::decode_views;

/// Deadlines for CRI calls. Defaults follow the kubelet (two minutes per call) except for
/// connecting, which fails fast so an absent runtime is reported at once.
#[derive(Debug, Clone)]
pub struct Timeouts {
    pub connect: Duration,
    pub call: Duration,
    pub image_pull: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            call: Duration::from_secs(120),
            image_pull: Duration::from_secs(600),
        }
    }
}

#[derive(Clone)]
pub struct CriClient {
    endpoint: String,
    /// For calls decoded into views of their answers (`listing.rs`).
    channel: Channel,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
    timeouts: Timeouts,
    observer: Option<Observer>,
    /// Calls that change the runtime run at most this many at once, served by stage
    /// (`gate.rs`; `None`: no bound).
    mutations: Option<gate::Gate>,
}

impl std::fmt::Debug for CriClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl CriClient {
    /// Builds the client without touching the socket; the first call connects.
    pub fn new(endpoint: &str, timeouts: Timeouts) -> Result<Self, CriError> {
        let parsed = Endpoint::parse(endpoint)?;
        let path = parsed.path().to_path_buf();
        // The URI is required by tonic but unused: the connector below ignores it.
        let channel = tonic::transport::Endpoint::from_static("http://cri.invalid")
            .connect_timeout(timeouts.connect)
            .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { UnixStream::connect(path).await.map(TokioIo::new) }
            }));
        Ok(Self {
            endpoint: parsed.to_string(),
            channel: channel.clone(),
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
            timeouts,
            observer: None,
            mutations: None,
        })
    }

    /// At most `n` calls that change the runtime (`MUTATIONS`) at once; the rest wait
    /// their turn before their deadline starts, a pod's containers before another pod's
    /// teardown before another pod's sandbox (`gate.rs`), each stage in arrival order.
    pub fn with_mutation_limit(mut self, n: usize) -> Self {
        self.mutations = Some(gate::Gate::new(n));
        self
    }

    /// Tells `observer` of every call from now on (metrics).
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }

    /// Runs one unary call under a client-side deadline, mapping failures to [`CriError`].
    /// No retries here: tonic's channel reconnects by itself once the runtime is back, and
    /// whether a failed call may be repeated is the caller's decision (a create that
    /// reached the runtime before the connection broke must not simply run again).
    ///
    /// A call that changes the runtime runs to its end once sent, even if its caller stops
    /// waiting (a cancelled sync, a deadline): a request reset mid-way can leave the runtime
    /// with a container stuck half started (containerd 2.1 kept one "starting", its `runc
    /// init` waiting forever, and refused to remove it).
    async fn unary<T: Send + 'static>(
        &self,
        op: &'static str,
        limit: Duration,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send + 'static,
    ) -> Result<T, CriError> {
        let stage = gate::Stage::of(op);
        let permit = match (&self.mutations, stage) {
            (Some(g), Some(stage)) => g.acquire(stage).await,
            _ => None,
        };
        let started = std::time::Instant::now();
        let endpoint = self.endpoint.clone();
        // Boxed: a call waiting for its permit holds its request, not the running call's
        // state (tests/call_size.rs).
        let work = Box::pin(async move {
            let call = flow::deadline(endpoint, op, limit, call);
            match op {
                "StopContainer" => flow::holding_for(permit, flow::STOP_HOLD, call).await,
                _ => {
                    let result = call.await;
                    drop(permit);
                    result
                }
            }
        });
        let result = match stage {
            Some(_) => flow::to_the_end(op, work).await,
            None => work.await,
        };
        let took = started.elapsed();
        tracing::trace!(op, ?took, error = result.is_err(), "CRI call");
        if let Some(o) = &self.observer {
            o.observe(op, took, result.is_err());
        }
        result
    }

    pub async fn version(&self) -> Result<VersionResponse, CriError> {
        self.unary(
            "Version",
            self.timeouts.call,
            call!(
                self.runtime,
                version,
                VersionRequest {
                    version: "v1".into(),
                }
            ),
        )
        .await
    }

    pub async fn status(&self, verbose: bool) -> Result<StatusResponse, CriError> {
        self.unary(
            "Status",
            self.timeouts.call,
            call!(self.runtime, status, StatusRequest { verbose }),
        )
        .await
    }

    pub async fn run_pod_sandbox(
        &self,
        config: PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, CriError> {
        let req = RunPodSandboxRequest {
            config: Some(config),
            runtime_handler: runtime_handler.to_string(),
        };
        self.unary(
            "RunPodSandbox",
            self.timeouts.call,
            call!(self.runtime, run_pod_sandbox, req),
        )
        .await
        .map(|r| r.pod_sandbox_id)
    }

    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = StopPodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.unary(
            "StopPodSandbox",
            self.timeouts.call,
            call!(self.runtime, stop_pod_sandbox, req),
        )
        .await
        .map(drop)
    }

    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let req = RemovePodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.unary(
            "RemovePodSandbox",
            self.timeouts.call,
            call!(self.runtime, remove_pod_sandbox, req),
        )
        .await
        .map(drop)
    }

    pub async fn pod_sandbox_status(&self, id: &str) -> Result<PodSandboxStatus, CriError> {
        let resp = self.pod_sandbox_status_response(id, false).await?;
        resp.status
            .ok_or_else(|| CriError::failed("PodSandboxStatus", "response without status"))
    }

    pub(crate) async fn pod_sandbox_status_response(
        &self,
        id: &str,
        verbose: bool,
    ) -> Result<PodSandboxStatusResponse, CriError> {
        let req = PodSandboxStatusRequest {
            pod_sandbox_id: id.to_string(),
            verbose,
        };
        self.unary(
            "PodSandboxStatus",
            self.timeouts.call,
            call!(self.runtime, pod_sandbox_status, req),
        )
        .await
    }

    pub async fn create_container(
        &self,
        sandbox_id: &str,
        config: ContainerConfig,
        sandbox_config: PodSandboxConfig,
    ) -> Result<String, CriError> {
        let req = CreateContainerRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        self.unary(
            "CreateContainer",
            self.timeouts.call,
            call!(self.runtime, create_container, req),
        )
        .await
        .map(|r| r.container_id)
    }

    pub async fn start_container(&self, id: &str) -> Result<(), CriError> {
        let req = StartContainerRequest {
            container_id: id.to_string(),
        };
        self.unary(
            "StartContainer",
            self.timeouts.call,
            call!(self.runtime, start_container, req),
        )
        .await
        .map(drop)
    }

    /// Stops a container, giving it `grace` between SIGTERM and SIGKILL. The call itself
    /// may take that long, so its deadline is the grace period plus the usual call budget.
    pub async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        let req = StopContainerRequest {
            container_id: id.to_string(),
            timeout: grace.as_secs() as i64,
        };
        let limit = self.timeouts.call + grace;
        self.unary(
            "StopContainer",
            limit,
            call!(self.runtime, stop_container, req),
        )
        .await
        .map(drop)
    }

    pub async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        let req = RemoveContainerRequest {
            container_id: id.to_string(),
        };
        self.unary(
            "RemoveContainer",
            self.timeouts.call,
            call!(self.runtime, remove_container, req),
        )
        .await
        .map(drop)
    }

    /// Has the runtime reopen the container's log file (after it was renamed).
    pub async fn reopen_container_log(&self, id: &str) -> Result<(), CriError> {
        let req = ReopenContainerLogRequest {
            container_id: id.to_string(),
        };
        self.unary(
            "ReopenContainerLog",
            self.timeouts.call,
            call!(self.runtime, reopen_container_log, req),
        )
        .await
        .map(drop)
    }

    pub async fn container_status(&self, id: &str) -> Result<ContainerStatus, CriError> {
        let req = ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: false,
        };
        let resp = self
            .unary(
                "ContainerStatus",
                self.timeouts.call,
                call!(self.runtime, container_status, req),
            )
            .await?;
        resp.status
            .ok_or_else(|| CriError::failed("ContainerStatus", "response without status"))
    }

    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecSyncResponse, CriError> {
        let req = ExecSyncRequest {
            container_id: id.to_string(),
            cmd,
            timeout: timeout.as_secs() as i64,
        };
        let limit = self.timeouts.call + timeout;
        self.unary("ExecSync", limit, call!(self.runtime, exec_sync, req))
            .await
    }

    /// Opens the runtime's container event stream. containerd 1.6 answers `Unimplemented`.
    ///
    /// A stream has no deadline, and its answer has no deadline either: a gRPC server sends
    /// a stream's headers with its first message, so on an idle node this call returns only
    /// when the first container event happens. Callers wanting a stream at once use
    /// `CriRuntime::container_events`, which makes this call the stream's first step.
    pub async fn get_container_events(
        &self,
    ) -> Result<tonic::Streaming<ContainerEventResponse>, CriError> {
        let mut svc = self.runtime.clone();
        let started = std::time::Instant::now();
        let opened = svc
            .get_container_events(GetEventsRequest {})
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| CriError::from_status("GetContainerEvents", &self.endpoint, status));
        if let Some(o) = &self.observer {
            o.observe("GetContainerEvents", started.elapsed(), opened.is_err());
        }
        opened
    }
}
