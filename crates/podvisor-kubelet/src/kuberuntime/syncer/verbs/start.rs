//! Starting one container: unless it is backing off after a crash; starting the instance an
//! earlier create left instead of making a second; making its image present; then create
//! and start, adopting a create whose answer was lost; then its postStart hook, during
//! which it does not count as Running, and whose failure stops it.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Container;
use podvisor_core::{PodExt, SharedPod};
use podvisor_cri::proto::{ContainerConfig, NamespaceMode};
use podvisor_cri::{ContainerState, ContainerStatus, ImageUser, PodStatus};
use tracing::{debug, info, warn};

use super::super::{CriSyncError, CriSyncer};
use super::SandboxInfo;
use crate::kuberuntime::actions::{CONTAINER_HASH, Step, container_hash};
use crate::kuberuntime::cleanup;
use crate::kuberuntime::config::{
    Instance, backoff_left, check_explicit_user, check_image_user, container_config, crash_backoff,
    etc_hosts_path, hosts_file, must_check_image_user, next_attempt, pod_log_directory,
    termination_log_path,
};
use crate::log_rotation::links;
use crate::protocol::cache::ContainerId;
use crate::protocol::images::{EnsureImage, PullPolicy};
use crate::protocol::status::{EventType, Waiting, WaitingReason};
use crate::protocol::sync::SyncError;

/// Whether this sync started the container (its postStart hook is then run) or found it
/// started by an earlier one.
enum Started {
    Now(String),
    Before(String),
}

/// Why containers of the pod wait, by container name.
pub(crate) type Waits = HashMap<String, Waiting>;

/// The pod a container is started in: its runtime status as the sync saw it, and the
/// sandbox.
pub(crate) struct Target<'a> {
    pub pod: &'a SharedPod,
    pub status: &'a PodStatus,
    pub sandbox: &'a SandboxInfo,
}

/// The soonest end of a crash-loop backoff a container of the pod waits out.
pub(crate) fn backoff_ends_in(status: &PodStatus, waits: &Waits) -> Option<std::time::Duration> {
    let now = podvisor_core::time::now_nanos();
    waits
        .iter()
        .filter(|(_, w)| w.reason == WaitingReason::CrashLoopBackOff)
        .filter_map(|(name, _)| backoff_left(status.container(name)?, now))
        .min()
}

/// The container a start step names (an ephemeral one as the container it runs as).
pub(crate) fn container_of(pod: &SharedPod, step: &Step) -> Option<Container> {
    match *step {
        Step::StartInit(i) => pod.init_containers().get(i).cloned(),
        Step::StartContainer(i) => pod.containers().get(i).cloned(),
        Step::StartEphemeral(i) => pod
            .ephemeral_containers()
            .get(i)
            .map(podvisor_core::pod::ephemeral_as_container),
        _ => None,
    }
}

/// An ephemeral container with a `targetContainerName` joins that container's process
/// namespace (unless the pod shares one, or the host's), as the kubelet starts it: a
/// debugger sees the processes it came to debug.
fn share_target_pids(cfg: &mut ContainerConfig, t: &Target<'_>, c: &Container) {
    let target = t
        .pod
        .ephemeral_containers()
        .iter()
        .find(|ec| ec.name == c.name)
        .and_then(|ec| ec.target_container_name.as_deref())
        .and_then(|name| t.status.container(name))
        .filter(|s| s.state == ContainerState::Running);
    let ns = cfg
        .linux
        .as_mut()
        .and_then(|l| l.security_context.as_mut())
        .and_then(|s| s.namespace_options.as_mut());
    if let (Some(target), Some(ns)) = (target, ns)
        && ns.pid == NamespaceMode::Container as i32
    {
        ns.pid = NamespaceMode::Target as i32;
        ns.target_id = target.id.clone();
    }
}

fn wait(waits: &mut Waits, c: &Container, reason: WaitingReason, message: String) {
    waits.insert(c.name.clone(), Waiting::new(reason, message));
}

impl CriSyncer {
    /// Starts one container unless it is backing off; records why it waits otherwise.
    /// The instance it started (or found started), `None` if it waits.
    pub(crate) async fn start_container(
        &self,
        t: &Target<'_>,
        c: &Container,
        waits: &mut Waits,
    ) -> Result<Option<ContainerId>, SyncError> {
        let previous = t.status.container(&c.name);
        if self.backing_off(t.pod, previous, c, waits) {
            return Ok(None);
        }
        if let Some(p) = previous.filter(|p| p.state == ContainerState::Created)
            && self.resume_created(t, p, c).await?
        {
            self.post_start(t, c, &p.id, waits).await?;
            return Ok(Some(ContainerId(p.id.clone())));
        }
        let image = self.ensure_image(t.pod, c, waits).await?;
        let (attempt, backoff_base) = match previous {
            Some(_) => next_attempt(previous),
            None => {
                let dir = pod_log_directory(&self.node, t.pod).join(&c.name);
                let first = cleanup::first_attempt(&dir).await;
                (first, first)
            }
        };
        // Every reason a container's config cannot be made is a `Failed` event too, as the
        // kubelet records `FailedToCreateContainer`.
        let config_error = |waits: &mut Waits, e: String| {
            self.event(t.pod, EventType::Warning, "Failed", format!("Error: {e}"));
            wait(waits, c, WaitingReason::CreateContainerConfigError, e);
        };
        self.verify_non_root(t.pod, c, &image)
            .await
            .inspect_err(|e| config_error(waits, e.to_string()))?;
        let env = self.environment(t, c).await.map_err(|e| {
            config_error(waits, e.to_string());
            CriSyncError::Volume(e)
        })?;
        let etc_hosts = self.write_etc_hosts(t).await?;
        let termination_log = self.termination_log(t, c, attempt).await?;
        let instance = Instance {
            pod: t.pod,
            container: c,
            image: &image,
            attempt,
            backoff_base,
            env: &env,
            etc_hosts: Some(&etc_hosts),
            termination_log: Some(&termination_log),
        };
        let mut cfg = container_config(&self.node, &instance).map_err(|e| {
            config_error(waits, e.to_string());
            CriSyncError::Config(e)
        })?;
        share_target_pids(&mut cfg, t, c);
        self.bind_sub_paths(t.pod, c)
            .await
            .inspect_err(|e| config_error(waits, e.to_string()))?;
        match self.create_and_start(t, c, &cfg, attempt, waits).await? {
            Started::Now(id) => {
                self.post_start(t, c, &id, waits).await?;
                Ok(Some(ContainerId(id)))
            }
            Started::Before(id) => Ok(Some(ContainerId(id))),
        }
    }

    /// Writes the pod's hosts file (its addresses may have changed with a new sandbox; a
    /// host-network pod's follows the node's own file).
    async fn write_etc_hosts(&self, t: &Target<'_>) -> Result<std::path::PathBuf, CriSyncError> {
        let path = etc_hosts_path(&self.node, t.pod.uid());
        let ips: Vec<String> = t.sandbox.ip.iter().cloned().collect();
        let host = match t.pod.host_network() {
            true => tokio::fs::read_to_string("/etc/hosts").await.ok(),
            false => None,
        };
        let text = hosts_file(&self.node, t.pod, &ips, host.as_deref());
        if tokio::fs::read_to_string(&path).await.ok().as_deref() != Some(text.as_str()) {
            tokio::fs::write(&path, text)
                .await
                .map_err(|source| CriSyncError::Io {
                    action: "write",
                    path: path.clone(),
                    source,
                })?;
        }
        Ok(path)
    }

    /// A fresh, empty termination-message file for this instance (writable by any user,
    /// as the kubelet makes it); the one of two instances back goes (the last one's stays
    /// for the previous state's message).
    async fn termination_log(
        &self,
        t: &Target<'_>,
        c: &Container,
        attempt: u32,
    ) -> Result<std::path::PathBuf, CriSyncError> {
        use std::os::unix::fs::PermissionsExt;
        let path = termination_log_path(&self.node, t.pod.uid(), &c.name, attempt);
        if let Some(old) = attempt.checked_sub(2) {
            let stale = termination_log_path(&self.node, t.pod.uid(), &c.name, old);
            let _ = tokio::fs::remove_file(stale).await;
        }
        let io = |source| CriSyncError::Io {
            action: "create",
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(io)?;
        }
        tokio::fs::write(&path, b"").await.map_err(io)?;
        let mode = std::fs::Permissions::from_mode(0o666);
        tokio::fs::set_permissions(&path, mode).await.map_err(io)?;
        Ok(path)
    }

    /// `runAsNonRoot`: an explicit `runAsUser` must not be 0, and with none the image's
    /// user must not be root (the kubelet's `verifyRunAsNonRoot`).
    async fn verify_non_root(
        &self,
        pod: &SharedPod,
        c: &Container,
        image: &str,
    ) -> Result<(), CriSyncError> {
        check_explicit_user(pod, c).map_err(CriSyncError::Config)?;
        if !must_check_image_user(pod, c) {
            return Ok(());
        }
        let found =
            self.runtime
                .image_status(image)
                .await
                .map_err(|error| CriSyncError::ImageStatus {
                    image: image.to_string(),
                    error,
                })?;
        let user = found.map(|i| i.user).unwrap_or(ImageUser::Uid(0));
        check_image_user(&user).map_err(CriSyncError::Config)
    }

    /// Crash-loop backoff: an exited instance whose backoff has not run out waits.
    fn backing_off(
        &self,
        pod: &SharedPod,
        previous: Option<&ContainerStatus>,
        c: &Container,
        waits: &mut Waits,
    ) -> bool {
        let Some(p) = previous else { return false };
        if backoff_left(p, podvisor_core::time::now_nanos()).is_none() {
            return false;
        }
        let backoff = crash_backoff(p);
        let message = format!(
            "back-off {}s restarting failed container={} pod={}",
            backoff.as_secs(),
            c.name,
            pod.name()
        );
        self.event(pod, EventType::Warning, "BackOff", message.clone());
        wait(waits, c, WaitingReason::CrashLoopBackOff, message);
        true
    }

    /// Duplicate protection: an instance that was created but never started (the create's
    /// answer was lost to a timeout, or the agent died between create and start) is started
    /// if it is what the spec wants now, and removed otherwise: never a second instance
    /// beside it. Whether it was started.
    async fn resume_created(
        &self,
        t: &Target<'_>,
        p: &ContainerStatus,
        c: &Container,
    ) -> Result<bool, SyncError> {
        let current = p.sandbox_id == t.sandbox.id
            && p.annotations.get(CONTAINER_HASH) == Some(&container_hash(c));
        if current {
            info!(pod_uid = %t.pod.uid(), container = %c.name, id = %p.id, "starting the instance an earlier create left");
            self.runtime.start_container(&p.id).await?;
            self.event(
                t.pod,
                EventType::Normal,
                "Started",
                format!("Started container {}", c.name),
            );
            return Ok(true);
        }
        match self.runtime.remove_container(&p.id).await {
            Err(e) if !e.is_not_found() => Err(e.into()),
            _ => Ok(false),
        }
    }

    /// The image reference to create the container from, per its pull policy.
    async fn ensure_image(
        &self,
        pod: &SharedPod,
        c: &Container,
        waits: &mut Waits,
    ) -> Result<String, CriSyncError> {
        let image = c.image.clone().unwrap_or_default();
        let policy = PullPolicy::of(&image, c.image_pull_policy.as_deref());
        let msg = EnsureImage {
            pod: pod.uid().clone(),
            image: image.clone(),
            policy,
            credentials: self.pull_credentials(pod, &image).await,
        };
        match self.out.images.send(msg).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                let message = format!("Failed to pull image {image:?}: {}", e.message);
                self.event(pod, EventType::Warning, "Failed", message);
                wait(waits, c, e.reason, e.message.clone());
                Err(CriSyncError::Image { image, error: e })
            }
            Err(e) => Err(CriSyncError::ImageManager(e)),
        }
    }

    async fn create_and_start(
        &self,
        t: &Target<'_>,
        c: &Container,
        cfg: &podvisor_cri::proto::ContainerConfig,
        attempt: u32,
        waits: &mut Waits,
    ) -> Result<Started, SyncError> {
        let id = match self
            .runtime
            .create_container(&t.sandbox.id, cfg, &t.sandbox.config)
            .await
        {
            Ok(id) => id,
            Err(e) if e.is_already_exists() => {
                // An earlier create of this attempt happened after all: use what it made.
                let fresh = self.runtime.pod_status(t.pod.uid().as_str()).await?;
                match fresh
                    .containers
                    .iter()
                    .find(|x| x.name == c.name && x.attempt == attempt)
                {
                    Some(x) if x.state == ContainerState::Created => x.id.clone(),
                    Some(x) => return Ok(Started::Before(x.id.clone())), // started too
                    None => return Err(e.into()),
                }
            }
            Err(e) => {
                wait(waits, c, WaitingReason::CreateContainerError, e.to_string());
                return Err(e.into());
            }
        };
        self.link_log(t.pod, c, &id, attempt).await;
        self.event(
            t.pod,
            EventType::Normal,
            "Created",
            format!("Created container {}", c.name),
        );
        self.runtime.start_container(&id).await?;
        self.event(
            t.pod,
            EventType::Normal,
            "Started",
            format!("Started container {}", c.name),
        );
        debug!(pod_uid = %t.pod.uid(), container = %c.name, attempt, "container started");
        Ok(Started::Now(id))
    }

    /// The container's `/var/log/containers` link, made before it starts so that a log
    /// shipper sees its first line (the log rotation's sweep repairs one missed here).
    async fn link_log(&self, pod: &SharedPod, c: &Container, id: &str, attempt: u32) {
        let Some(dir) = self.node.container_links_dir.clone() else {
            return;
        };
        let log = format!("{attempt}.log");
        let target = pod_log_directory(&self.node, pod).join(&c.name).join(log);
        let name = links::name(pod.name(), pod.namespace(), &c.name, id);
        let made = tokio::task::spawn_blocking(move || links::make(&dir, &name, &target)).await;
        if let Ok(Err(e)) = made {
            warn!(pod_uid = %pod.uid(), container = %c.name, error = %e, "cannot link the container's log");
        }
    }
}
