//! [`Runtime`] over CRI: what podvisor runs against containerd.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt};

use crate::client::{CriClient, Timeouts, listing};
use crate::error::CriError;
use crate::model::*;
use crate::proto::{self, ContainerConfig, LinuxContainerResources, PodSandboxConfig};
use crate::runtime::{EventStream, Runtime};

#[derive(Debug, Clone)]
pub struct CriRuntime {
    client: CriClient,
}

impl CriRuntime {
    pub fn new(endpoint: &str, timeouts: Timeouts) -> Result<Self, CriError> {
        Ok(Self {
            client: CriClient::new(endpoint, timeouts)?,
        })
    }

    pub fn client(&self) -> &CriClient {
        &self.client
    }

    /// At most `n` calls that change the runtime at once (`client::MUTATIONS`).
    pub fn with_mutation_limit(mut self, n: usize) -> Self {
        self.client = self.client.with_mutation_limit(n);
        self
    }

    /// Tells `observer` of every CRI call this runtime makes (metrics).
    pub fn with_observer(mut self, observer: crate::Observer) -> Self {
        self.client = self.client.with_observer(observer);
        self
    }
}

#[async_trait]
impl Runtime for CriRuntime {
    fn age_of(&self, at: i64) -> Duration {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let at = u128::try_from(at).unwrap_or(0);
        Duration::from_nanos(u64::try_from(now.saturating_sub(at)).unwrap_or(u64::MAX))
    }

    async fn version(&self) -> Result<RuntimeVersion, CriError> {
        let v = self.client.version().await?;
        Ok(RuntimeVersion {
            runtime_name: v.runtime_name,
            runtime_version: v.runtime_version,
            runtime_api_version: v.runtime_api_version,
        })
    }

    async fn conditions(&self) -> Result<Vec<RuntimeCondition>, CriError> {
        let status = self.client.status(false).await?.status.unwrap_or_default();
        Ok(status
            .conditions
            .into_iter()
            .map(|c| RuntimeCondition {
                kind: c.r#type,
                status: c.status,
                reason: c.reason,
                message: c.message,
            })
            .collect())
    }

    async fn list_pods(&self) -> Result<Vec<Pod>, CriError> {
        let (sandboxes, containers) = self.client.list_views(None).await?;
        let (sandboxes, containers) = listing::into_model(sandboxes, containers);
        Ok(group_pods(sandboxes, containers))
    }

    async fn pod_status(&self, uid: &str) -> Result<PodStatus, CriError> {
        let (sandboxes, containers) = self.client.list_views(Some(uid)).await?;
        let listed = listing::ids(sandboxes, containers);
        self.pod_status_listed(uid, &listed).await
    }

    async fn pod_status_listed(
        &self,
        uid: &str,
        listed: &ListedIds,
    ) -> Result<PodStatus, CriError> {
        // Statuses are fetched concurrently: a pod's inspection is on the path between a
        // container exiting and the pod worker seeing it. One removed between the listing
        // and its status call is simply gone, not a failed inspection of the whole pod.
        let sandbox_statuses = futures_util::future::join_all(
            listed
                .sandboxes
                .iter()
                .map(|id| self.client.pod_sandbox_status(id)),
        );
        let container_statuses = futures_util::future::join_all(
            listed
                .containers
                .iter()
                .map(|(id, _)| self.client.container_status(id)),
        );
        let (sandbox_statuses, container_statuses) =
            tokio::join!(sandbox_statuses, container_statuses);
        let mut sandbox_out = Vec::with_capacity(listed.sandboxes.len());
        for r in sandbox_statuses {
            if let Some(s) = present(r)? {
                sandbox_out.push(s.into());
            }
        }
        let mut container_out = Vec::with_capacity(listed.containers.len());
        for ((_, sandbox_id), r) in listed.containers.iter().zip(container_statuses) {
            if let Some(c) = present(r)? {
                let mut c: ContainerStatus = c.into();
                c.sandbox_id.clone_from(sandbox_id);
                container_out.push(c);
            }
        }
        Ok(PodStatus::assemble(uid, sandbox_out, container_out))
    }

    async fn run_sandbox(&self, config: &PodSandboxConfig) -> Result<String, CriError> {
        self.client.run_pod_sandbox(config.clone(), "").await
    }

    async fn stop_sandbox(&self, id: &str) -> Result<(), CriError> {
        self.client.stop_pod_sandbox(id).await
    }

    async fn remove_sandbox(&self, id: &str) -> Result<(), CriError> {
        self.client.remove_pod_sandbox(id).await
    }

    async fn sandbox_status(&self, id: &str) -> Result<SandboxStatus, CriError> {
        self.client.pod_sandbox_status(id).await.map(Into::into)
    }

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &ContainerConfig,
        sandbox: &PodSandboxConfig,
    ) -> Result<String, CriError> {
        self.client
            .create_container(sandbox_id, config.clone(), sandbox.clone())
            .await
    }

    async fn start_container(&self, id: &str) -> Result<(), CriError> {
        self.client.start_container(id).await
    }

    async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        self.client.stop_container(id, grace).await
    }

    async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        self.client.remove_container(id).await
    }

    async fn container_status(&self, id: &str) -> Result<ContainerStatus, CriError> {
        self.client.container_status(id).await.map(Into::into)
    }

    async fn reopen_container_log(&self, id: &str) -> Result<(), CriError> {
        self.client.reopen_container_log(id).await
    }

    async fn update_container_resources(
        &self,
        id: &str,
        resources: &LinuxContainerResources,
    ) -> Result<(), CriError> {
        self.client
            .update_container_resources(id, resources.clone())
            .await
    }

    async fn image_status(&self, image: &str) -> Result<Option<Image>, CriError> {
        Ok(self.client.image_status(image).await?.map(Into::into))
    }

    async fn pull_image(
        &self,
        image: &str,
        auth: Option<&RegistryAuth>,
        sandbox: Option<&PodSandboxConfig>,
    ) -> Result<String, CriError> {
        self.client
            .pull_image(image, auth.map(Into::into), sandbox.cloned())
            .await
    }

    async fn list_images(&self) -> Result<Vec<Image>, CriError> {
        Ok(self
            .client
            .list_images()
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    async fn remove_image(&self, id: &str) -> Result<(), CriError> {
        self.client.remove_image(id).await
    }

    async fn images_in_use(&self) -> Result<Vec<String>, CriError> {
        self.client.images_in_use().await
    }

    async fn stream_url(&self, request: &StreamRequest) -> Result<String, CriError> {
        self.client.stream_url(request).await
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> Result<ExecResult, CriError> {
        let r = self
            .client
            .exec_sync(container_id, cmd.to_vec(), timeout)
            .await?;
        Ok(ExecResult {
            stdout: r.stdout,
            stderr: r.stderr,
            exit_code: r.exit_code,
        })
    }

    /// The stream is returned at once; opening it is its first step, so a runtime that
    /// cannot stream says so as the stream's first item (and an idle runtime, which answers
    /// only with its first event, does not look like a failed open).
    async fn container_usage(&self) -> Result<Vec<ContainerUsage>, CriError> {
        // An empty filter rather than none: containerd 1.6 fails a whole stats list on
        // one not-ready sandbox without it.
        let filter = Some(proto::ContainerStatsFilter::default());
        let stats = self.client.list_container_stats(filter).await?;
        Ok(stats.into_iter().map(ContainerUsage::from).collect())
    }

    async fn sandbox_usage(&self, node: &str) -> Result<Vec<SandboxUsage>, CriError> {
        let stats = self.client.list_pod_sandbox_stats(node).await?;
        Ok(stats.into_iter().map(SandboxUsage::from).collect())
    }

    async fn sandbox_pid(&self, id: &str) -> Result<Option<u32>, CriError> {
        self.client.pod_sandbox_pid(id).await
    }

    async fn image_fs(&self) -> Result<Vec<FsSample>, CriError> {
        let info = self.client.image_fs_info().await?;
        Ok(info
            .image_filesystems
            .into_iter()
            .map(FsSample::from)
            .collect())
    }

    async fn container_events(&self) -> Result<EventStream, CriError> {
        let client = self.client.clone();
        let endpoint = self.client.endpoint().to_string();
        let opened = async move { client.get_container_events().await };
        Ok(futures_util::stream::once(opened)
            .flat_map(move |opened| match opened {
                Ok(stream) => {
                    let endpoint = endpoint.clone();
                    stream
                        .map_ok(ContainerEvent::from)
                        .map_err(move |s| CriError::from_status("GetContainerEvents", &endpoint, s))
                        .boxed()
                }
                Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
            })
            .boxed())
    }
}

/// A status call's answer, where "not found" means the object went away meanwhile.
fn present<T>(r: Result<T, CriError>) -> Result<Option<T>, CriError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}
