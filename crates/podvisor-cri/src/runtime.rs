//! The runtime interface the kubelet logic is written against, at the level of the
//! kubelet's own runtime abstraction: pods and their status rather than raw RPCs. Both
//! containerd ([`crate::CriRuntime`]) and the in-memory [`crate::FakeRuntime`] implement it,
//! so actors hold an `Arc<dyn Runtime>` and tests swap the implementation.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream::BoxStream;

use crate::error::CriError;
use crate::model::*;
use crate::proto::{ContainerConfig, LinuxContainerResources, PodSandboxConfig};

pub type EventStream = BoxStream<'static, Result<ContainerEvent, CriError>>;

#[async_trait]
pub trait Runtime: Send + Sync + 'static {
    async fn version(&self) -> Result<RuntimeVersion, CriError>;
    /// How long ago the runtime's timestamp `at` (CRI nanoseconds) was, by the runtime's
    /// own clock; zero for one not yet past.
    fn age_of(&self, at: i64) -> Duration;
    async fn conditions(&self) -> Result<Vec<RuntimeCondition>, CriError>;

    /// Every pod the runtime knows, with all its sandboxes and containers (also exited
    /// and not-ready ones): the PLEG's relist.
    async fn list_pods(&self) -> Result<Vec<Pod>, CriError>;
    /// Full status of one pod: every sandbox and container status carrying its UID.
    async fn pod_status(&self, uid: &str) -> Result<PodStatus, CriError>;
    /// Full status of one pod whose sandboxes and containers a listing just showed, by
    /// status calls alone (no listing of its own). Something made after that listing is
    /// missing, as it would be from the listing; something removed since is left out.
    async fn pod_status_listed(
        &self,
        uid: &str,
        listed: &ListedIds,
    ) -> Result<PodStatus, CriError> {
        let _ = listed;
        self.pod_status(uid).await
    }

    async fn run_sandbox(&self, config: &PodSandboxConfig) -> Result<String, CriError>;
    async fn stop_sandbox(&self, id: &str) -> Result<(), CriError>;
    async fn remove_sandbox(&self, id: &str) -> Result<(), CriError>;
    async fn sandbox_status(&self, id: &str) -> Result<SandboxStatus, CriError>;

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &ContainerConfig,
        sandbox: &PodSandboxConfig,
    ) -> Result<String, CriError>;
    async fn start_container(&self, id: &str) -> Result<(), CriError>;
    /// SIGTERM, then SIGKILL once `grace` has passed.
    async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError>;
    async fn remove_container(&self, id: &str) -> Result<(), CriError>;
    async fn container_status(&self, id: &str) -> Result<ContainerStatus, CriError>;
    /// Changes a created or running container's CPU and memory in place (a resize).
    async fn update_container_resources(
        &self,
        id: &str,
        resources: &LinuxContainerResources,
    ) -> Result<(), CriError>;
    /// Reopens the container's log file, which podvisor renamed to rotate it.
    async fn reopen_container_log(&self, id: &str) -> Result<(), CriError>;

    /// `None` when the image is not present on the node.
    async fn image_status(&self, image: &str) -> Result<Option<Image>, CriError>;
    /// Pulls an image (with `auth` for the registry, if given) and returns its reference
    /// (digest).
    async fn pull_image(
        &self,
        image: &str,
        auth: Option<&RegistryAuth>,
        sandbox: Option<&PodSandboxConfig>,
    ) -> Result<String, CriError>;
    async fn list_images(&self) -> Result<Vec<Image>, CriError>;
    /// Removes an image by id (what image garbage collection frees); a missing one is
    /// not an error, as in CRI.
    async fn remove_image(&self, id: &str) -> Result<(), CriError>;
    /// The images the runtime's containers use (any state, any owner), by the names,
    /// references and ids the runtime gives.
    async fn images_in_use(&self) -> Result<Vec<String>, CriError>;

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> Result<ExecResult, CriError>;

    /// What every container uses now (CRI ListContainerStats); a container without a
    /// running task has no samples.
    async fn container_usage(&self) -> Result<Vec<ContainerUsage>, CriError>;

    /// What each sandbox `node`'s agent made measures (CRI ListPodSandboxStats, filtered by
    /// [`crate::labels::MANAGED_BY`]: containerd fails the whole list on one sandbox it
    /// cannot measure, such as another agent's without a cgroup): its network and its
    /// processes. Runtimes without it answer [`CriError::Unimplemented`] (containerd 1.6).
    async fn sandbox_usage(&self, node: &str) -> Result<Vec<SandboxUsage>, CriError>;

    /// The process holding a sandbox's namespaces (CRI PodSandboxStatus, verbose), where
    /// the runtime says.
    async fn sandbox_pid(&self, id: &str) -> Result<Option<u32>, CriError>;

    /// What the images take, per filesystem (CRI ImageFsInfo).
    async fn image_fs(&self) -> Result<Vec<FsSample>, CriError>;

    /// The runtime's container event stream. Runtimes that cannot stream answer
    /// [`CriError::Unimplemented`] (containerd 1.6 does).
    async fn container_events(&self) -> Result<EventStream, CriError>;

    /// Prepares one exec, attach or port-forward session and answers the URL of the
    /// runtime's stream server serving it (single use).
    async fn stream_url(&self, request: &StreamRequest) -> Result<String, CriError>;
}
