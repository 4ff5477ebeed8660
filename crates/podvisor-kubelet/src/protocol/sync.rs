//! The three functions a pod worker calls: the seam between the lifecycle state machine
//! (`pod_workers`) and what a sync does to the runtime (`kuberuntime`, over CRI), so the
//! state machine is tested with fakes.

use std::sync::Arc;

use async_trait::async_trait;
use podvisor_core::{GracePeriod, PodUid, SharedPod};
use podvisor_cri::{CriError, PodStatus};
use tokio_util::sync::CancellationToken;

use super::cache::ContainerId;
use super::updates::{RuntimePod, StatusFn, UpdateType};

/// Handed to every sync: which pod, and the token that is cancelled when newer work makes
/// this sync pointless (the pod started terminating, or its grace period shrank). A sync
/// that is cancelled is dropped at its next await; long waits should watch the token.
#[derive(Clone, Debug)]
pub struct SyncContext {
    pub uid: PodUid,
    pub cancel: CancellationToken,
}

/// What a successful `sync_pod` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    /// The pod reached a terminal phase (all containers done for good): terminate it.
    pub terminal: bool,
    /// The sync changed the runtime (so the next one should not wait for a relist).
    pub changed: bool,
    /// Look at the pod again after this long at the latest, sooner than the resync: a
    /// container waits out a crash-loop backoff that ends then. Nothing else would bring
    /// the sync that restarts it (no event happens when a backoff ends).
    pub recheck_in: Option<std::time::Duration>,
    /// The container whose start was the last change the sync made, when it was one and
    /// every change before it succeeded: status showing it started shows all the sync
    /// did (its changes are made one after another), so the next sync need not wait for
    /// status newer than this one's end (`GetNewerThan::showing`).
    pub last_started: Option<ContainerId>,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Runtime(#[from] CriError),
    /// An implementation's own failure, in its words (the seam does not know the
    /// implementations' error types; the worker only logs it and backs off).
    #[error("{0}")]
    Other(String),
}

/// What a terminating sync is given beyond the pod.
pub struct Termination<'a> {
    pub grace: GracePeriod,
    /// Set for a pod known only from the runtime (no config holds it).
    pub running_pod: Option<&'a RuntimePod>,
    /// Adjust the pod's API status once the termination succeeded.
    pub status_fns: &'a [StatusFn],
}

#[async_trait]
pub trait PodSyncer: Send + Sync + 'static {
    /// Brings a pod that should run to its desired state.
    async fn sync_pod(
        &self,
        ctx: &SyncContext,
        update: UpdateType,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
    ) -> Result<SyncOutcome, SyncError>;

    /// Stops every container of the pod, giving each the grace period, then its sandbox.
    async fn sync_terminating_pod(
        &self,
        ctx: &SyncContext,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
        termination: Termination<'_>,
    ) -> Result<(), SyncError>;

    /// Cleans up after a terminated pod: removes its containers, sandbox and directories.
    async fn sync_terminated_pod(
        &self,
        ctx: &SyncContext,
        pod: &SharedPod,
        status: &Arc<PodStatus>,
    ) -> Result<(), SyncError>;
}
