//! The real sync functions over CRI: what the pod workers call to set a pod up, stop it,
//! and clean up after it. `sync_pod` computes the plan (`actions.rs`, pure) and carries out
//! its steps through the verbs (`verbs/`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use podvisor_actors::{MailboxError, Recipient};
use podvisor_core::{PodExt, SharedPod};
use podvisor_cri::{PodStatus, Runtime};
use tracing::{debug, info, warn};

use super::actions::{PodActions, Step, compute_pod_actions};
use super::config::{ConfigError, NodeConfig};
use super::verbs::{Target, Waits, running_of, running_of_listing};
use crate::protocol::images::{EnsureImage, ImageError};
use crate::protocol::status::{EventType, PodSynced, PodTerminated, RecordEvent, Waiting};
use crate::protocol::sync::SyncOutcome;
use crate::protocol::sync::{PodSyncer, SyncContext, SyncError, Termination};
use crate::protocol::updates::UpdateType;

/// What the CRI syncer's own steps can fail with (the runtime's calls fail with
/// `CriError`); reported to the pod workers as `SyncError::Other`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CriSyncError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("image {image:?}: {error}")]
    Image { image: String, error: ImageError },
    #[error("the image manager did not answer: {0}")]
    ImageManager(MailboxError),
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
    pub(super) runtime: Arc<dyn Runtime>,
    pub(super) node: NodeConfig,
    pub(super) out: SyncerOutputs,
}

impl CriSyncer {
    pub fn new(runtime: Arc<dyn Runtime>, node: NodeConfig, out: SyncerOutputs) -> Self {
        Self { runtime, node, out }
    }

    pub(super) fn event(
        &self,
        pod: &SharedPod,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        self.out.events.do_send(RecordEvent {
            pod: pod.clone(),
            kind,
            reason,
            message,
        });
    }

    fn report(&self, pod: &SharedPod, waiting: HashMap<String, Waiting>) {
        self.out.synced.do_send(PodSynced {
            pod: pod.clone(),
            waiting,
        });
    }

    /// Carries out the plan's steps, recording why containers wait in `waits`. Stopping
    /// fails the sync at once; a container that cannot start does not keep the others from
    /// starting (the first such error is returned after).
    async fn run_steps(
        &self,
        pod: &SharedPod,
        status: &PodStatus,
        actions: &PodActions,
        waits: &mut Waits,
    ) -> Result<(), SyncError> {
        let mut first_error = None;
        let mut sandbox = actions
            .sandbox_id
            .clone()
            .map(|id| self.kept_sandbox(pod, id, status.ips.first().cloned(), actions.attempt));
        for step in actions.steps() {
            match step {
                Step::KillPod { replacing } => {
                    if replacing && !status.sandboxes.is_empty() {
                        let message = "Pod sandbox changed, it will be killed and re-created.";
                        self.event(pod, EventType::Normal, "SandboxChanged", message.into());
                    }
                    let (containers, sandboxes) = running_of(status);
                    self.kill(pod, &containers, &sandboxes, pod.spec_grace_period())
                        .await?;
                }
                Step::KillContainers(kills) => {
                    let kills: Vec<(String, String)> =
                        kills.into_iter().map(|k| (k.id, k.name)).collect();
                    self.kill(pod, &kills, &[], pod.spec_grace_period()).await?;
                }
                Step::CreateSandbox { attempt } => {
                    sandbox = Some(self.create_sandbox(pod, attempt).await?)
                }
                Step::StartInit(i) | Step::StartContainer(i) => {
                    let list = if matches!(step, Step::StartInit(_)) {
                        pod.init_containers()
                    } else {
                        pod.containers()
                    };
                    let (Some(c), Some(sb)) = (list.get(i), sandbox.as_ref()) else {
                        continue;
                    };
                    let target = Target {
                        pod,
                        status,
                        sandbox: sb,
                    };
                    if let Err(e) = self.start_container(&target, c, waits).await {
                        warn!(pod_uid = %pod.uid(), container = %c.name, error = %e, "container not started");
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[async_trait]
impl PodSyncer for CriSyncer {
    async fn sync_pod(
        &self,
        _: &SyncContext,
        _: UpdateType,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
    ) -> Result<SyncOutcome, SyncError> {
        let api = crate::status_manager::convert::api_status(pod, status, &HashMap::new(), false);
        let terminal = phase_of(&api).is_some_and(podvisor_core::Phase::is_terminal);
        if terminal {
            self.report(pod, HashMap::new());
            return Ok(SyncOutcome {
                terminal: true,
                changed: false,
            });
        }
        self.make_dirs(pod).await?;
        let actions = compute_pod_actions(pod, status);
        if actions.is_noop() {
            self.report(pod, HashMap::new());
            return Ok(SyncOutcome::default());
        }
        debug!(pod_uid = %pod.uid(), ?actions, "syncing pod");
        // A pod being set up is reported before acting too (as the kubelet's syncPod
        // does): it appears as Pending (ContainerCreating) at once, not when its sandbox
        // and images are ready. Only then: other syncs would report without the waiting
        // reasons they are about to find (CrashLoopBackOff would flicker to Error).
        if actions.create_sandbox {
            self.report(pod, HashMap::new());
        }
        let mut waits = Waits::new();
        let result = self.run_steps(pod, status, &actions, &mut waits).await;
        self.report(pod, waits);
        result.map(|()| SyncOutcome {
            terminal: false,
            changed: true,
        })
    }

    async fn sync_terminating_pod(
        &self,
        _: &SyncContext,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
        t: Termination<'_>,
    ) -> Result<(), SyncError> {
        let (containers, sandboxes) = match t.running_pod {
            Some(rp) => running_of_listing(rp.runtime()),
            None => running_of(status),
        };
        info!(pod_uid = %pod.uid(), grace_period = t.grace.seconds(), containers = containers.len(), "stopping pod");
        self.kill(pod, &containers, &sandboxes, t.grace).await?;
        if t.running_pod.is_some() {
            // An orphan gets no terminated sync: remove what it left behind now.
            return self.remove_all(pod.uid()).await;
        }
        self.out.terminated.do_send(PodTerminated {
            pod: pod.clone(),
            status_fns: t.status_fns.to_vec(),
        });
        Ok(())
    }

    async fn sync_terminated_pod(
        &self,
        _: &SyncContext,
        pod: &SharedPod,
        _: &Arc<PodStatus>,
    ) -> Result<(), SyncError> {
        self.remove_all(pod.uid()).await?;
        self.remove_dirs(pod).await?;
        info!(pod_uid = %pod.uid(), "pod cleaned up");
        Ok(())
    }
}

fn phase_of(status: &k8s_openapi::api::core::v1::PodStatus) -> Option<podvisor_core::Phase> {
    status.phase.as_deref()?.parse().ok()
}
