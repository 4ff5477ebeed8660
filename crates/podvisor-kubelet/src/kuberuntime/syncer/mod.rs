//! The real sync functions over CRI: what the pod workers call to set a pod up, stop it,
//! and clean up after it. `sync_pod` computes the plan (`actions.rs`, pure) and carries out
//! its steps through the verbs (`verbs/`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use podvisor_actors::{MailboxError, Recipient};
use podvisor_core::restart::is_sidecar;
use podvisor_core::{PodExt, SharedPod};
use podvisor_cri::{PodStatus, Runtime};
use podvisor_probe::Verdicts;
use tracing::{debug, info, warn};

use super::actions::{ContainerKill, PodActions, Step, compute_pod_actions};
use super::config::{ConfigError, NodeConfig};
use crate::api_status::deadline;
mod outputs;
mod verbs;

use crate::protocol::cache::ContainerId;
use crate::protocol::images::{EnsureImage, ImageError};
use crate::protocol::probes::{EndProbes, ProbesEnd, SyncProbes};
use crate::protocol::status::{EventType, PodSynced, PodTerminated, RecordEvent};
use crate::protocol::sync::SyncOutcome;
use crate::protocol::sync::{PodSyncer, SyncContext, SyncError, Termination};
use crate::protocol::updates::UpdateType;
pub use verbs::PodObjects;
use verbs::{Stop, Target, Waits, backoff_ends_in, pod_ip, running_of, running_of_listing};

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
    #[error("image {image:?}: cannot read its user: {error}")]
    ImageStatus {
        image: String,
        error: podvisor_cri::CriError,
    },
    #[error("the image manager did not answer: {0}")]
    ImageManager(MailboxError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    PostStartHook(#[from] podvisor_probe::HookError),
    #[error(transparent)]
    SubPath(#[from] super::subpath::SubPathError),
    #[error("a blocking task failed: {0}")]
    Blocking(String),
    #[error(transparent)]
    Volume(#[from] podvisor_volumes::VolumeError),
}

impl From<CriSyncError> for SyncError {
    fn from(e: CriSyncError) -> Self {
        SyncError::Other(e.to_string())
    }
}

/// Where the syncer reports what it sees and does.
pub struct SyncerOutputs {
    pub images: Recipient<EnsureImage>,
    pub synced: Recipient<PodSynced>,
    pub terminated: Recipient<PodTerminated>,
    pub events: Recipient<RecordEvent>,
    /// The prober: each sync registers the pod's probes and asks what they found; a
    /// termination ends them. `None`: no probes run (a tree without a prober).
    pub probes: Option<Recipient<SyncProbes>>,
    pub probes_end: Option<Recipient<EndProbes>>,
}

pub struct CriSyncer {
    pub(super) runtime: Arc<dyn Runtime>,
    pub(super) node: NodeConfig,
    pub(super) out: SyncerOutputs,
    pub(super) objects: PodObjects,
    metrics: crate::metrics::Metrics,
}

impl CriSyncer {
    pub fn new(runtime: Arc<dyn Runtime>, node: NodeConfig, out: SyncerOutputs) -> Self {
        Self {
            runtime,
            node,
            out,
            objects: PodObjects::default(),
            metrics: crate::metrics::Metrics::default(),
        }
    }

    /// Reads the pods' ConfigMaps, Secrets and tokens from `objects`.
    pub fn with_objects(mut self, objects: PodObjects) -> Self {
        self.objects = objects;
        self
    }

    /// Counts container starts in `metrics` (`kubelet_started_containers_*`).
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// What the probes found of the pod's running instances (nothing, without a prober or
    /// when it cannot answer: no probe kills, no sidecar counts as started by its probe). A
    /// pod without probes costs no message (its spec cannot gain one: pods are immutable
    /// but for their images).
    async fn verdicts(&self, pod: &SharedPod) -> Verdicts {
        let Some(probes) = self
            .out
            .probes
            .as_ref()
            .filter(|_| podvisor_probe::has_probes(pod))
        else {
            return Verdicts::default();
        };
        probes
            .send(SyncProbes { pod: pod.clone() })
            .await
            .unwrap_or_else(|e| {
                warn!(pod_uid = %pod.uid(), error = %e, "the prober did not answer; syncing without its verdicts");
                Verdicts::default()
            })
    }

    fn end_probes(&self, pod: &SharedPod, end: ProbesEnd) {
        if let Some(p) = self
            .out
            .probes_end
            .as_ref()
            .filter(|_| podvisor_probe::has_probes(pod))
        {
            p.do_send(EndProbes {
                uid: pod.uid().clone(),
                end,
            });
        }
    }

    /// The containers a sync stops, each with its grace period: the failed probe's own,
    /// or the pod's.
    fn stops(pod: &SharedPod, kills: &[ContainerKill]) -> Vec<Stop> {
        kills
            .iter()
            .map(|k| Stop {
                id: k.id.clone(),
                name: k.name.clone(),
                message: k.message.clone(),
                grace: pod
                    .deletion_grace_period()
                    .or(k.grace)
                    .unwrap_or_else(|| pod.spec_grace_period()),
            })
            .collect()
    }

    /// Carries out a sync's plan and reports the pod's status.
    async fn act(
        &self,
        pod: &SharedPod,
        status: &PodStatus,
        actions: &PodActions,
    ) -> Result<SyncOutcome, SyncError> {
        // A pod being set up is reported before acting too (as the kubelet's syncPod
        // does): it appears as Pending (ContainerCreating) at once, not when its sandbox
        // and images are ready. Only then: other syncs would report without the waiting
        // reasons they are about to find (CrashLoopBackOff would flicker to Error).
        if actions.create_sandbox {
            self.report(pod, HashMap::new());
        }
        let mut waits = Waits::new();
        let mut resize_error = None;
        let result = (self.run_steps(pod, status, actions, (&mut waits, &mut resize_error))).await;
        let recheck_in = backoff_ends_in(status, &waits);
        self.report_resized(pod, waits, resize_error);
        result.map(|last_started| SyncOutcome {
            terminal: false,
            changed: true,
            recheck_in,
            last_started,
        })
    }

    /// Carries out the plan's steps, recording why containers wait in `waits`. Stopping
    /// fails the sync at once; a regular init container that cannot start stops the
    /// starts; any other container that cannot start does not keep the others from
    /// starting (the first such error is returned after). The container whose start was
    /// the last change, if it was one (`SyncOutcome::last_started`).
    async fn run_steps(
        &self,
        pod: &SharedPod,
        status: &PodStatus,
        actions: &PodActions,
        (waits, resize_error): (&mut Waits, &mut Option<String>),
    ) -> Result<Option<ContainerId>, SyncError> {
        let mut first_error = None;
        let mut last_started = None;
        let ip = pod_ip(pod, status);
        let mut sandbox = actions
            .sandbox_id
            .clone()
            .map(|id| self.kept_sandbox(pod, id, status.ips.first().cloned(), actions.attempt));
        for step in actions.steps() {
            if !step.is_start() {
                last_started = None;
            }
            match step {
                Step::KillPod { replacing } => {
                    if replacing && !status.sandboxes.is_empty() {
                        let message = "Pod sandbox changed, it will be killed and re-created.";
                        self.event(pod, EventType::Normal, "SandboxChanged", message.into());
                    }
                    let (stops, sandboxes) = running_of(status, pod.spec_grace_period());
                    self.kill(pod, &ip, &stops, &sandboxes).await?;
                }
                Step::KillContainers(kills) => {
                    self.kill(pod, &ip, &Self::stops(pod, &kills), &[]).await?;
                }
                // A resize that fails does not keep the pod's containers from starting.
                Step::Resize(resizes) => {
                    if let Err(e) = self.resize(pod, status, &resizes).await {
                        *resize_error = Some(e.to_string());
                        first_error.get_or_insert(e);
                    }
                }
                Step::CreateSandbox { attempt } => {
                    sandbox = Some(self.create_sandbox(pod, attempt).await?)
                }
                _ => {
                    let Some(sb) = sandbox.as_ref() else { continue };
                    let target = Target {
                        pod,
                        status,
                        sandbox: sb,
                    };
                    match self.start_step(&target, &step, waits).await {
                        // `None`: it backs off (or is not in the spec): nothing changed.
                        Ok(id) => last_started = id.or(last_started),
                        Err((e, blocks)) => {
                            last_started = None;
                            first_error.get_or_insert(e);
                            if blocks {
                                break; // the next one waits for this one
                            }
                        }
                    }
                }
            }
        }
        first_error.map_or(Ok(last_started), Err)
    }

    /// One container's start, counted; its error, and whether it keeps the containers
    /// after it from starting (a regular init container's does).
    async fn start_step(
        &self,
        target: &Target<'_>,
        step: &Step,
        waits: &mut Waits,
    ) -> Result<Option<ContainerId>, (SyncError, bool)> {
        let init = matches!(step, Step::StartInit(_));
        let Some(c) = verbs::container_of(target.pod, step) else {
            return Ok(None);
        };
        let started = self.start_container(target, &c, waits).await;
        let reason = waits.get(&c.name).map(|w| w.reason.as_str());
        self.count_start(init, &started, reason);
        started.map_err(|e| {
            warn!(pod_uid = %target.pod.uid(), container = %c.name, error = %e, "container not started");
            (e, init && !is_sidecar(&c))
        })
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
        let api =
            crate::api_status::api_status(pod, status, &HashMap::new(), false, Default::default());
        let terminal = phase_of(&api).is_some_and(podvisor_core::Phase::is_terminal);
        if terminal {
            self.report(pod, HashMap::new());
            return Ok(SyncOutcome {
                terminal: true,
                ..Default::default()
            });
        }
        self.make_dirs(pod).await?;
        if let Err(e) = self.set_up_volumes(pod).await {
            self.report(pod, HashMap::new());
            return Err(e.into());
        }
        let verdicts = self.verdicts(pod).await;
        let actions = compute_pod_actions(pod, status, &verdicts);
        // A pod with an active deadline is synced again when it comes.
        let deadline = deadline::left(pod, status, podvisor_core::time::now_nanos());
        if actions.is_noop() {
            self.report(pod, HashMap::new());
            return Ok(SyncOutcome {
                recheck_in: deadline,
                ..SyncOutcome::default()
            });
        }
        debug!(pod_uid = %pod.uid(), ?actions, "syncing pod");
        // Allocated only now: most syncs find nothing to do, and the future of what they
        // may do is some 10 KiB (tests/syncer.rs).
        let mut outcome = Box::pin(self.act(pod, status, &actions)).await?;
        outcome.recheck_in = deadline::sooner(outcome.recheck_in, deadline);
        Ok(outcome)
    }

    async fn sync_terminating_pod(
        &self,
        _: &SyncContext,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
        t: Termination<'_>,
    ) -> Result<(), SyncError> {
        // A container is not restarted while it is being stopped: its liveness and
        // startup probes end now; readiness goes on until it stopped.
        self.end_probes(pod, ProbesEnd::Terminating);
        let (stops, sandboxes) = match t.running_pod {
            Some(rp) => running_of_listing(rp.runtime(), t.grace),
            None => running_of(status, t.grace),
        };
        info!(pod_uid = %pod.uid(), grace_period = t.grace.seconds(), containers = stops.len(), "stopping pod");
        self.kill(pod, &pod_ip(pod, status), &stops, &sandboxes)
            .await?;
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
        status: &Arc<PodStatus>,
    ) -> Result<(), SyncError> {
        self.end_probes(pod, ProbesEnd::Terminated);
        if pod.is_deleted() {
            // What the runtime holds of the pod as of after its termination (the worker
            // waited for status that new), without a listing of its own: on containerd 1.6
            // each walks every pod. Anything missed is an orphan for housekeeping to remove.
            self.remove_listed(status).await?;
            // Its containers gone, so can its cgroup be.
            for e in self.node.pod_cgroups.iter().flat_map(|c| c.remove(pod)) {
                tracing::warn!(pod_uid = %pod.uid(), error = %e, "the pod's cgroup stays");
            }
        }
        // A pod that finished stays in the API until someone deletes it: as the kubelet
        // does, its stopped sandbox and last containers stay too (and so their logs, which
        // `kubectl logs` reads through the kubelet server); once the pod is gone they are
        // an orphan's, which housekeeping removes.
        self.remove_dirs(pod).await?;
        info!(pod_uid = %pod.uid(), "pod cleaned up");
        Ok(())
    }
}

fn phase_of(status: &k8s_openapi::api::core::v1::PodStatus) -> Option<podvisor_core::Phase> {
    status.phase.as_deref()?.parse().ok()
}
