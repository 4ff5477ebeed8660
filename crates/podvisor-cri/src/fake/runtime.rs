//! The fake's answers to every runtime call, following containerd's rules.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;

use super::*;
use crate::proto::LinuxContainerResources;

#[async_trait]
impl Runtime for FakeRuntime {
    fn age_of(&self, at: i64) -> Duration {
        let now = BASE_NANOS + Instant::now().duration_since(self.epoch).as_nanos() as i64;
        Duration::from_nanos(u64::try_from(now - at).unwrap_or(0))
    }

    async fn version(&self) -> Result<RuntimeVersion, CriError> {
        self.enter(Op::Version, "").await?;
        Ok(RuntimeVersion {
            runtime_name: "fake".into(),
            runtime_version: "0.0.0".into(),
            runtime_api_version: "v1".into(),
        })
    }

    async fn conditions(&self) -> Result<Vec<RuntimeCondition>, CriError> {
        self.enter(Op::Conditions, "").await?;
        Ok(["RuntimeReady", "NetworkReady"]
            .into_iter()
            .map(|kind| RuntimeCondition {
                kind: kind.into(),
                status: true,
                reason: String::new(),
                message: String::new(),
            })
            .collect())
    }

    async fn list_pods(&self) -> Result<Vec<Pod>, CriError> {
        self.enter(Op::ListPods, "").await?;
        Ok(self.lock().state.list_pods())
    }

    async fn container_usage(&self) -> Result<Vec<ContainerUsage>, CriError> {
        self.enter(Op::ContainerUsage, "").await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        Ok(inner.state.usage(now))
    }

    async fn sandbox_usage(&self, node: &str) -> Result<Vec<SandboxUsage>, CriError> {
        self.enter(Op::SandboxUsage, "").await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        Ok(inner.state.sandbox_usage(node, now))
    }

    /// The fake runs no processes.
    async fn sandbox_pid(&self, id: &str) -> Result<Option<u32>, CriError> {
        self.enter(Op::SandboxStatus, id).await?;
        Ok(None)
    }

    async fn image_fs(&self) -> Result<Vec<FsSample>, CriError> {
        self.enter(Op::ImageFs, "").await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        Ok(inner.state.image_fs(now))
    }

    async fn pod_status(&self, uid: &str) -> Result<PodStatus, CriError> {
        self.enter(Op::PodStatus, uid).await?;
        Ok(self.lock().state.pod_status(uid))
    }

    async fn pod_status_listed(
        &self,
        uid: &str,
        listed: &ListedIds,
    ) -> Result<PodStatus, CriError> {
        self.enter(Op::PodStatusListed, uid).await?;
        let status = self.lock().state.pod_status(uid);
        // Only what the listing showed, as containerd's status calls give.
        let sandboxes = status
            .sandboxes
            .into_iter()
            .filter(|s| listed.sandboxes.contains(&s.id))
            .collect();
        let containers = status
            .containers
            .into_iter()
            .filter(|c| listed.containers.iter().any(|(id, _)| *id == c.id))
            .collect();
        Ok(PodStatus::assemble(uid, sandboxes, containers))
    }

    async fn run_sandbox(&self, config: &PodSandboxConfig) -> Result<String, CriError> {
        let uid = config
            .metadata
            .as_ref()
            .map(|m| m.uid.as_str())
            .unwrap_or("");
        self.enter(Op::RunSandbox, uid).await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        inner.state.run_sandbox(config, now)
    }

    async fn stop_sandbox(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::StopSandbox, id).await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        for cid in inner.state.stop_sandbox(id, now)? {
            emit(&inner, &cid, ContainerEventKind::Stopped, now);
        }
        Ok(())
    }

    async fn remove_sandbox(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::RemoveSandbox, id).await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        for cid in inner.state.remove_sandbox(id, now)? {
            emit(&inner, &cid, ContainerEventKind::Deleted, now);
        }
        Ok(())
    }

    async fn sandbox_status(&self, id: &str) -> Result<SandboxStatus, CriError> {
        self.enter(Op::SandboxStatus, id).await?;
        self.lock()
            .state
            .sandboxes
            .get(id)
            .map(|s| s.status.clone())
            .ok_or_else(|| CriError::not_found("PodSandboxStatus", format!("sandbox {id}")))
    }

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &ContainerConfig,
        _sandbox: &PodSandboxConfig,
    ) -> Result<String, CriError> {
        let name = config
            .metadata
            .as_ref()
            .map(|m| m.name.as_str())
            .unwrap_or("");
        self.enter(Op::CreateContainer, name).await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        let id = inner.state.create_container(sandbox_id, config, now)?;
        emit(&inner, &id, ContainerEventKind::Created, now);
        Ok(id)
    }

    async fn start_container(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::StartContainer, id).await?;
        let program = {
            let mut inner = self.lock();
            let now = self.now(&mut inner);
            let program = inner.state.start_container(id, now)?;
            emit(&inner, id, ContainerEventKind::Started, now);
            program
        };
        self.schedule_exit(id, &program);
        Ok(())
    }

    async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        self.enter(Op::StopContainer, id).await?;
        let ignores_sigterm = {
            let inner = self.lock();
            let c =
                inner.state.containers.get(id).ok_or_else(|| {
                    CriError::not_found("StopContainer", format!("container {id}"))
                })?;
            c.status.state == ContainerState::Running && c.program.ignores_sigterm
        };
        let code = if ignores_sigterm {
            tokio::time::sleep(grace).await;
            SIGKILL_EXIT
        } else {
            SIGTERM_EXIT
        };
        self.exit_container(id, code);
        Ok(())
    }

    async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::RemoveContainer, id).await?;
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        emit(&inner, id, ContainerEventKind::Deleted, now);
        inner.state.remove_container(id, now)
    }

    async fn container_status(&self, id: &str) -> Result<ContainerStatus, CriError> {
        self.enter(Op::ContainerStatus, id).await?;
        self.lock()
            .state
            .containers
            .get(id)
            .map(|c| c.status.clone())
            .ok_or_else(|| CriError::not_found("ContainerStatus", format!("container {id}")))
    }

    async fn update_container_resources(
        &self,
        id: &str,
        resources: &LinuxContainerResources,
    ) -> Result<(), CriError> {
        self.enter(Op::UpdateContainerResources, id).await?;
        self.lock().state.update_resources(id, resources)
    }

    async fn reopen_container_log(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::ReopenContainerLog, id).await?;
        match self.lock().state.containers.get(id) {
            Some(c) if c.status.state == ContainerState::Running => Ok(()),
            Some(_) => Err(CriError::failed(
                "ReopenContainerLog",
                "container is not running",
            )),
            None => Err(CriError::not_found(
                "ReopenContainerLog",
                format!("container {id}"),
            )),
        }
    }

    async fn image_status(&self, image: &str) -> Result<Option<Image>, CriError> {
        self.enter(Op::ImageStatus, image).await?;
        Ok(self
            .lock()
            .state
            .images
            .contains(image)
            .then(|| fake_image(image)))
    }

    async fn pull_image(
        &self,
        image: &str,
        auth: Option<&RegistryAuth>,
        _sandbox: Option<&PodSandboxConfig>,
    ) -> Result<String, CriError> {
        self.enter(Op::PullImage, image).await?;
        let mut inner = self.lock();
        let user = auth.map(|a| a.username.as_str());
        let login = inner.state.logins.get(image).map(String::as_str);
        if login.is_some_and(|l| user != Some(l)) {
            return Err(CriError::failed(
                "PullImage",
                format!("failed to pull {image:?}: 401 Unauthorized (fake)"),
            ));
        }
        if !inner.state.pullable.contains(image) {
            return Err(CriError::failed(
                "PullImage",
                format!("failed to pull {image:?}: registry unreachable (fake)"),
            ));
        }
        inner.state.images.insert(image.to_string());
        Ok(fake_image(image).id)
    }

    async fn list_images(&self) -> Result<Vec<Image>, CriError> {
        self.enter(Op::ListImages, "").await?;
        Ok(self
            .lock()
            .state
            .images
            .iter()
            .map(|i| fake_image(i))
            .collect())
    }

    async fn remove_image(&self, id: &str) -> Result<(), CriError> {
        self.enter(Op::RemoveImage, id).await?;
        self.lock()
            .state
            .images
            .retain(|i| fake_image(i).id != id && i != id);
        Ok(())
    }

    async fn images_in_use(&self) -> Result<Vec<String>, CriError> {
        self.enter(Op::ListImages, "in-use").await?;
        let inner = self.lock();
        let used = inner.state.containers.values();
        Ok(used
            .flat_map(|c| [c.status.image.clone(), c.status.image_ref.clone()])
            .collect())
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        _cmd: &[String],
        _timeout: Duration,
    ) -> Result<ExecResult, CriError> {
        self.enter(Op::ExecSync, container_id).await?;
        let inner = self.lock();
        match inner.state.containers.get(container_id) {
            Some(c) if c.status.state == ContainerState::Running => Ok(c.program.exec.clone()),
            Some(_) => Err(CriError::failed("ExecSync", "container is not running")),
            None => Err(CriError::not_found(
                "ExecSync",
                format!("container {container_id}"),
            )),
        }
    }

    /// A URL naming what it would serve (the fake has no stream server): tests see which
    /// container or sandbox a request resolved to.
    async fn stream_url(&self, request: &StreamRequest) -> Result<String, CriError> {
        let inner = self.lock();
        let (verb, id, known) = match request {
            StreamRequest::Exec { container_id, .. } => {
                let known = inner.state.containers.contains_key(container_id);
                ("exec", container_id, known)
            }
            StreamRequest::Attach { container_id, .. } => {
                let known = inner.state.containers.contains_key(container_id);
                ("attach", container_id, known)
            }
            StreamRequest::PortForward { sandbox_id, .. } => {
                let known = inner.state.sandboxes.contains_key(sandbox_id);
                ("portforward", sandbox_id, known)
            }
        };
        if !known {
            return Err(CriError::not_found("stream", id.clone()));
        }
        Ok(format!("http://fake.invalid/{verb}/{id}"))
    }

    async fn container_events(&self) -> Result<EventStream, CriError> {
        self.enter(Op::Events, "").await?;
        let rx = match &self.lock().events {
            Some(tx) => tx.subscribe(),
            None => {
                return Err(CriError::Unimplemented {
                    op: "GetContainerEvents",
                    message: "fake runtime configured without an event stream".into(),
                });
            }
        };
        Ok(tokio_stream::wrappers::BroadcastStream::new(rx)
            .map(|r| {
                r.map_err(|e| CriError::failed("GetContainerEvents", e.to_string()))
                    .and_then(|item| item)
            })
            .boxed())
    }
}
