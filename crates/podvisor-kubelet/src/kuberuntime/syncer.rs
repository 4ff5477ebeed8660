//! The real sync functions over CRI: what the pod workers call to set a pod up, stop it,
//! and clean up after it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use futures_util::future::join_all;
use k8s_openapi::api::core::v1::{Container, Pod};
use podvisor_actors::Recipient;
use podvisor_cri::proto::PodSandboxConfig;
use podvisor_cri::{ContainerState, CriError, PodStatus, Runtime, SandboxState};
use tracing::{debug, info, warn};

use super::actions::{
    CONTAINER_HASH, compute_pod_actions, container_hash, containers, init_containers,
};
use super::cleanup;
use super::config::{
    ConfigError, NodeConfig, container_config, crash_backoff, empty_dir_path, next_attempt,
    pod_log_directory, pod_state_dir, sandbox_config,
};
use super::images::{EnsureImage, ImageError, PullPolicy};
use crate::pod_workers::{
    PodSyncer, RuntimePod, StatusFn, SyncContext, SyncError, SyncOutcome, UpdateType,
    pod as podinfo,
};
use crate::status_manager::{PodSynced, PodTerminated, RecordEvent, Waiting, api_status};

/// What the CRI syncer's own steps can fail with (the runtime's calls fail with
/// `CriError`); reported to the pod workers as `SyncError::Other`.
#[derive(Debug, thiserror::Error)]
pub enum CriSyncError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("image {image:?}: {error}")]
    Image { image: String, error: ImageError },
    #[error("the image manager did not answer: {0}")]
    ImageManager(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl From<CriSyncError> for SyncError {
    fn from(e: CriSyncError) -> Self {
        SyncError::Other(Box::new(e))
    }
}

/// Where the syncer reports what it sees and does.
pub struct SyncerOutputs {
    pub images: Recipient<EnsureImage>,
    pub synced: Recipient<PodSynced>,
    pub terminated: Recipient<PodTerminated>,
    pub events: Recipient<RecordEvent>,
}

pub struct CriSyncer {
    runtime: Arc<dyn Runtime>,
    node: NodeConfig,
    out: SyncerOutputs,
}

/// containerd refuses a second sandbox or container with the same name and attempt: the
/// sign that an earlier create (perhaps timed out on our side) did happen.
fn already_exists(e: &CriError) -> bool {
    e.to_string().contains("reserved")
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl CriSyncer {
    pub fn new(runtime: Arc<dyn Runtime>, node: NodeConfig, out: SyncerOutputs) -> Self {
        Self { runtime, node, out }
    }

    fn event(&self, pod: &Arc<Pod>, warning: bool, reason: &str, message: String) {
        self.out.events.do_send(RecordEvent {
            pod: pod.clone(),
            warning,
            reason: reason.to_string(),
            message,
        });
    }

    async fn make_dirs(&self, pod: &Pod) -> Result<(), SyncError> {
        let uid = podinfo::uid(pod);
        let io = |p: &Path, source: std::io::Error| CriSyncError::Io {
            action: "create",
            path: p.to_path_buf(),
            source,
        };
        let mut dirs = vec![
            pod_log_directory(&self.node, pod),
            pod_state_dir(&self.node, uid),
        ];
        for v in pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
        {
            if v.empty_dir.is_some() {
                dirs.push(empty_dir_path(&self.node, uid, &v.name));
            }
            if let Some(hp) = &v.host_path
                && matches!(hp.type_.as_deref(), Some("DirectoryOrCreate"))
            {
                dirs.push(hp.path.clone().into());
            }
        }
        for d in &dirs {
            tokio::fs::create_dir_all(d).await.map_err(|e| io(d, e))?;
        }
        cleanup::mark_log_dir(&self.node, &dirs[0])
            .await
            .map_err(|e| io(&dirs[0], e))?;
        Ok(())
    }

    /// Stops every running container (concurrently, each with `grace`), then every ready
    /// sandbox.
    async fn kill(
        &self,
        pod: &Arc<Pod>,
        containers: Vec<(String, String)>,
        sandboxes: Vec<String>,
        grace: i64,
    ) -> Result<(), SyncError> {
        let grace = Duration::from_secs(grace.max(0) as u64);
        for (_, name) in &containers {
            self.event(pod, false, "Killing", format!("Stopping container {name}"));
        }
        let stops = join_all(
            containers
                .iter()
                .map(|(id, _)| self.runtime.stop_container(id, grace)),
        )
        .await;
        for r in stops {
            match r {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        for id in sandboxes {
            match self.runtime.stop_sandbox(&id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    async fn create_sandbox(
        &self,
        pod: &Pod,
        attempt: u32,
    ) -> Result<(String, Option<String>, PodSandboxConfig), SyncError> {
        let uid = podinfo::uid(pod);
        let cfg = sandbox_config(&self.node, pod, attempt);
        let id = match self.runtime.run_sandbox(&cfg).await {
            Ok(id) => id,
            Err(e) if already_exists(&e) => {
                // Created by an earlier attempt whose answer we never saw: adopt it.
                let status = self.runtime.pod_status(uid).await?;
                status
                    .sandboxes
                    .iter()
                    .find(|s| s.attempt == attempt && s.state == SandboxState::Ready)
                    .map(|s| s.id.clone())
                    .ok_or(e)?
            }
            Err(e) => return Err(e.into()),
        };
        let ip = self.runtime.sandbox_status(&id).await?.ip;
        info!(pod_uid = %uid, sandbox = %id, attempt, ip = ?ip, "sandbox ready");
        Ok((id, ip, cfg))
    }

    /// Starts one container (unless it is backing off); records why it waits otherwise.
    #[allow(clippy::too_many_arguments)]
    async fn start_container(
        &self,
        pod: &Arc<Pod>,
        status: &PodStatus,
        c: &Container,
        sandbox_id: &str,
        sandbox: &PodSandboxConfig,
        pod_ip: Option<&str>,
        waiting: &mut HashMap<String, Waiting>,
    ) -> Result<bool, SyncError> {
        let uid = podinfo::uid(pod);
        let previous = status.container(&c.name);
        if let Some(p) = previous.filter(|p| p.state == ContainerState::Exited) {
            let backoff = crash_backoff(p);
            let until = p.finished_at + backoff.as_nanos() as i64;
            if now_nanos() < until {
                let message = format!(
                    "back-off {}s restarting failed container={} pod={}",
                    backoff.as_secs(),
                    c.name,
                    pod.metadata.name.as_deref().unwrap_or("")
                );
                self.event(pod, true, "BackOff", message.clone());
                waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: "CrashLoopBackOff".into(),
                        message,
                    },
                );
                return Ok(false);
            }
        }
        // Duplicate protection: an instance that was created but never started (the
        // create's answer was lost to a timeout, or the agent died between create and
        // start) is started if it is what the spec wants now, and removed otherwise:
        // never a second instance beside it.
        if let Some(p) = previous.filter(|p| p.state == ContainerState::Created) {
            let current = p.sandbox_id == sandbox_id
                && p.annotations.get(CONTAINER_HASH) == Some(&container_hash(c));
            if current {
                info!(pod_uid = %uid, container = %c.name, id = %p.id, "starting the instance an earlier create left");
                self.runtime.start_container(&p.id).await?;
                self.event(
                    pod,
                    false,
                    "Started",
                    format!("Started container {}", c.name),
                );
                return Ok(true);
            }
            match self.runtime.remove_container(&p.id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        let image = c.image.clone().unwrap_or_default();
        let policy = PullPolicy::of(&image, c.image_pull_policy.as_deref());
        let image_ref = match self
            .out
            .images
            .send(EnsureImage {
                image: image.clone(),
                policy,
            })
            .await
        {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                self.event(
                    pod,
                    true,
                    "Failed",
                    format!("Failed to pull image {image:?}: {}", e.message),
                );
                waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: e.reason.into(),
                        message: e.message.clone(),
                    },
                );
                return Err(CriSyncError::Image { image, error: e }.into());
            }
            Err(e) => return Err(CriSyncError::ImageManager(e.to_string()).into()),
        };
        let (attempt, base) = match previous {
            Some(_) => next_attempt(previous),
            None => {
                let dir = pod_log_directory(&self.node, pod).join(&c.name);
                let first = cleanup::first_attempt(&dir).await;
                (first, first)
            }
        };
        let cfg = match container_config(&self.node, pod, c, &image_ref, attempt, base, pod_ip) {
            Ok(cfg) => cfg,
            Err(e) => {
                waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: "CreateContainerConfigError".into(),
                        message: e.to_string(),
                    },
                );
                return Err(CriSyncError::Config(e).into());
            }
        };
        let id = match self
            .runtime
            .create_container(sandbox_id, &cfg, sandbox)
            .await
        {
            Ok(id) => id,
            Err(e) if already_exists(&e) => {
                let fresh = self.runtime.pod_status(uid).await?;
                match fresh
                    .containers
                    .iter()
                    .find(|x| x.name == c.name && x.attempt == attempt)
                {
                    Some(x) if x.state == ContainerState::Created => x.id.clone(),
                    Some(_) => return Ok(true), // started too: nothing to do
                    None => return Err(e.into()),
                }
            }
            Err(e) => {
                waiting.insert(
                    c.name.clone(),
                    Waiting {
                        reason: "CreateContainerError".into(),
                        message: e.to_string(),
                    },
                );
                return Err(e.into());
            }
        };
        self.event(
            pod,
            false,
            "Created",
            format!("Created container {}", c.name),
        );
        self.runtime.start_container(&id).await?;
        self.event(
            pod,
            false,
            "Started",
            format!("Started container {}", c.name),
        );
        debug!(pod_uid = %uid, container = %c.name, attempt, "container started");
        Ok(true)
    }

    fn running_of(status: &PodStatus) -> (Vec<(String, String)>, Vec<String>) {
        (
            status
                .containers
                .iter()
                .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Created))
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect(),
            status
                .sandboxes
                .iter()
                .filter(|s| s.state == SandboxState::Ready)
                .map(|s| s.id.clone())
                .collect(),
        )
    }

    /// Removes every container and sandbox of the pod.
    async fn remove_all(&self, uid: &str) -> Result<(), SyncError> {
        let fresh = self.runtime.pod_status(uid).await?;
        for c in &fresh.containers {
            match self.runtime.remove_container(&c.id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        for s in &fresh.sandboxes {
            match self.runtime.remove_sandbox(&s.id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }
}

#[async_trait]
impl PodSyncer for CriSyncer {
    async fn sync_pod(
        &self,
        _ctx: &SyncContext,
        _update: UpdateType,
        pod: &Pod,
        status: &PodStatus,
    ) -> Result<SyncOutcome, SyncError> {
        let pod = Arc::new(pod.clone());
        let uid = podinfo::uid(&pod).to_string();
        let status = Arc::new(status.clone());
        let report = |waiting: HashMap<String, Waiting>| {
            self.out.synced.do_send(PodSynced {
                pod: pod.clone(),
                status: status.clone(),
                waiting,
                terminating: false,
            })
        };
        let phase = api_status(&pod, &status, &HashMap::new(), false).phase;
        if matches!(phase.as_deref(), Some("Succeeded") | Some("Failed")) {
            report(HashMap::new());
            return Ok(SyncOutcome {
                terminal: true,
                changed: false,
            });
        }
        self.make_dirs(&pod).await?;
        let actions = compute_pod_actions(&pod, &status);
        if actions.is_noop() {
            report(HashMap::new());
            return Ok(SyncOutcome::default());
        }
        debug!(pod_uid = %uid, ?actions, "syncing pod");
        // A pod being set up is reported before acting too (as the kubelet's syncPod
        // does): it appears as Pending (ContainerCreating) at once, not when its sandbox
        // and images are ready. Only then: other syncs would report without the waiting
        // reasons they are about to find (CrashLoopBackOff would flicker to Error).
        if actions.create_sandbox {
            report(HashMap::new());
        }
        let grace = podinfo::spec_grace_period(&pod);
        if actions.kill_pod {
            let (running, sandboxes) = Self::running_of(&status);
            if actions.create_sandbox && !status.sandboxes.is_empty() {
                self.event(
                    &pod,
                    false,
                    "SandboxChanged",
                    "Pod sandbox changed, it will be killed and re-created.".into(),
                );
            }
            self.kill(&pod, running, sandboxes, grace).await?;
            if !actions.create_sandbox {
                report(HashMap::new());
                return Ok(SyncOutcome {
                    terminal: false,
                    changed: true,
                });
            }
        } else if !actions.containers_to_kill.is_empty() {
            let kill: Vec<(String, String)> = actions
                .containers_to_kill
                .iter()
                .map(|(id, name, _)| (id.clone(), name.clone()))
                .collect();
            self.kill(&pod, kill, Vec::new(), grace).await?;
        }
        let (sandbox_id, pod_ip, sandbox_cfg) = if actions.create_sandbox {
            let (id, ip, cfg) = self.create_sandbox(&pod, actions.attempt).await?;
            (id, ip, cfg)
        } else {
            let id = actions.sandbox_id.clone().unwrap_or_default();
            (
                id,
                status.ips.first().cloned(),
                sandbox_config(&self.node, &pod, actions.attempt),
            )
        };
        let mut waiting = HashMap::new();
        let mut first_error = None;
        let to_start: Vec<&Container> = match actions.next_init_container {
            Some(i) => init_containers(&pod).get(i).into_iter().collect(),
            None => actions
                .containers_to_start
                .iter()
                .filter_map(|&i| containers(&pod).get(i))
                .collect(),
        };
        for c in to_start {
            if let Err(e) = self
                .start_container(
                    &pod,
                    &status,
                    c,
                    &sandbox_id,
                    &sandbox_cfg,
                    pod_ip.as_deref(),
                    &mut waiting,
                )
                .await
            {
                warn!(pod_uid = %uid, container = %c.name, error = %e, "container not started");
                first_error.get_or_insert(e);
            }
        }
        report(waiting);
        match first_error {
            Some(e) => Err(e),
            None => Ok(SyncOutcome {
                terminal: false,
                changed: true,
            }),
        }
    }

    async fn sync_terminating_pod(
        &self,
        _ctx: &SyncContext,
        pod: &Pod,
        status: &PodStatus,
        running_pod: Option<&RuntimePod>,
        grace_period: i64,
        status_fns: &[StatusFn],
    ) -> Result<(), SyncError> {
        let uid = podinfo::uid(pod).to_string();
        let pod = Arc::new(pod.clone());
        let (containers, sandboxes) = match running_pod {
            Some(rp) => (
                rp.0.containers
                    .iter()
                    .filter(|c| {
                        matches!(c.state, ContainerState::Running | ContainerState::Created)
                    })
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect(),
                rp.0.sandboxes
                    .iter()
                    .filter(|s| s.state == SandboxState::Ready)
                    .map(|s| s.id.clone())
                    .collect(),
            ),
            None => Self::running_of(status),
        };
        info!(pod_uid = %uid, grace_period, containers = containers.len(), "stopping pod");
        self.kill(&pod, containers, sandboxes, grace_period).await?;
        if running_pod.is_some() {
            // An orphan gets no terminated sync: remove what it left behind now.
            return self.remove_all(&uid).await;
        }
        let after = self.runtime.pod_status(&uid).await?;
        self.out.terminated.do_send(PodTerminated {
            pod,
            status: Arc::new(after),
            status_fns: status_fns.to_vec(),
        });
        Ok(())
    }

    async fn sync_terminated_pod(
        &self,
        _ctx: &SyncContext,
        pod: &Pod,
        _status: &PodStatus,
    ) -> Result<(), SyncError> {
        let uid = podinfo::uid(pod).to_string();
        self.remove_all(&uid).await?;
        let dir = pod_state_dir(&self.node, &uid);
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(CriSyncError::Io {
                action: "remove",
                path: dir,
                source: e,
            }
            .into());
        }
        // A pod still in its config (it completed) keeps its logs for `podvisor logs`.
        if podinfo::is_deleted(pod) {
            let _ = tokio::fs::remove_dir_all(pod_log_directory(&self.node, pod)).await;
        }
        info!(pod_uid = %uid, "pod cleaned up");
        Ok(())
    }
}
