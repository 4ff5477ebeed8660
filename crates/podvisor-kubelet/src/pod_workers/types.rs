//! The vocabulary of the pod workers: what an update asks for, the work a worker runs,
//! and what it reports back.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Why an update was sent (the kubelet's `SyncPodType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateType {
    /// The pod was just added to the desired set.
    Create,
    /// The pod's spec changed.
    Update,
    /// Periodic resync, or a runtime event: look again.
    Sync,
    /// Stop the pod.
    Kill,
}

/// Adjusts the pod's API status when its termination completes (an eviction sets the
/// reason). Shared, so every terminating attempt can be handed the full list.
pub type StatusFn = Arc<dyn Fn(&mut ApiPodStatus) + Send + Sync>;

/// Options of a kill.
#[derive(Default)]
pub struct KillPodOptions {
    /// Kill by eviction (the pod's resources are needed elsewhere).
    pub evict: bool,
    /// A grace period that replaces the pod's own, if shorter.
    pub grace_period_override: Option<i64>,
    /// Fired once the pod has terminated (or at once, when there is nothing to kill).
    pub completed: Option<oneshot::Sender<()>>,
    pub status_fn: Option<StatusFn>,
}

impl std::fmt::Debug for KillPodOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KillPodOptions")
            .field("evict", &self.evict)
            .field("grace_period_override", &self.grace_period_override)
            .field("completed", &self.completed.is_some())
            .field("status_fn", &self.status_fn.is_some())
            .finish()
    }
}

/// A pod that exists in the runtime but in no config source (an orphan): it can only be
/// killed.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimePod(pub podvisor_cri::Pod);

#[derive(Debug, Default)]
pub struct UpdatePodOptions {
    pub update_type: Option<UpdateType>,
    /// The desired pod; `None` for a runtime-only pod.
    pub pod: Option<Arc<Pod>>,
    pub running_pod: Option<RuntimePod>,
    pub kill: Option<KillPodOptions>,
    /// When the change was first requested (for latency figures).
    pub start_time: Option<Instant>,
}

impl UpdatePodOptions {
    pub fn new(update_type: UpdateType, pod: Arc<Pod>) -> Self {
        Self {
            update_type: Some(update_type),
            pod: Some(pod),
            start_time: Some(Instant::now()),
            ..Default::default()
        }
    }

    pub fn kill(pod: Arc<Pod>, kill: KillPodOptions) -> Self {
        Self {
            kill: Some(kill),
            ..Self::new(UpdateType::Kill, pod)
        }
    }

    /// The pod this update is about (the runtime pod's, for a runtime-only kill).
    pub fn uid(&self) -> &str {
        self.pod
            .as_deref()
            .map(super::pod::uid)
            .or_else(|| self.running_pod.as_ref().map(|r| r.0.pod.uid.as_str()))
            .unwrap_or_default()
    }

    pub fn runtime_kill(running: RuntimePod) -> Self {
        Self {
            update_type: Some(UpdateType::Kill),
            running_pod: Some(running),
            start_time: Some(Instant::now()),
            ..Default::default()
        }
    }
}

/// Which of the three sync functions a work item calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    Sync,
    Terminating,
    Terminated,
}

/// One sync for a worker to run.
#[derive(Clone)]
pub struct PodWork {
    /// Matches the worker's report to this delivery.
    pub seq: u64,
    pub kind: WorkKind,
    pub update_type: UpdateType,
    pub pod: Arc<Pod>,
    pub running_pod: Option<RuntimePod>,
    /// For terminating work: the effective grace period in seconds (never below 1).
    pub grace_period: Option<i64>,
    pub status_fns: Vec<StatusFn>,
}

impl std::fmt::Debug for PodWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodWork")
            .field("seq", &self.seq)
            .field("kind", &self.kind)
            .field("update_type", &self.update_type)
            .field("pod", &super::pod::uid(&self.pod))
            .field("runtime_only", &self.running_pod.is_some())
            .field("grace_period", &self.grace_period)
            .finish()
    }
}

/// What a successful `sync_pod` found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    /// The pod reached a terminal phase (all containers done for good): terminate it.
    pub terminal: bool,
    /// The sync changed the runtime (so the next one should not wait for a relist).
    pub changed: bool,
}

/// How a delivered work item ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkResult {
    Ok(SyncOutcome),
    /// A sync function failed: retried after the backoff period.
    Failed(String),
    /// Cancelled because the pod started terminating or its grace period shrank; the newer
    /// work is already waiting. Not an error.
    Cancelled,
}

/// A pod's place in its lifecycle, as `sync_known_pods` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PodWorkerState {
    Syncing,
    Terminating,
    Terminated,
    /// Terminated, and a pod with the same UID was requested meanwhile: the sync loop
    /// should add it again.
    TerminatedAndRecreated,
}
