//! The three functions a pod worker calls: the seam between the lifecycle state machine
//! (here) and what a sync does to the runtime (the agent's CRI implementation), so the
//! state machine is tested with fakes.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use podvisor_cri::{CriError, PodStatus};
use tokio_util::sync::CancellationToken;

use super::types::{RuntimePod, StatusFn, SyncOutcome, UpdateType};

/// Handed to every sync: which pod, and the token that is cancelled when newer work makes
/// this sync pointless (the pod started terminating, or its grace period shrank). A sync
/// that is cancelled is dropped at its next await; long waits should watch the token.
#[derive(Clone, Debug)]
pub struct SyncContext {
    pub uid: String,
    pub cancel: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Runtime(#[from] CriError),
    /// An implementation's own failure, its typed error boxed (the seam does not know the
    /// implementations; the worker only logs it and backs off).
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

#[async_trait]
pub trait PodSyncer: Send + Sync + 'static {
    /// Brings a pod that should run to its desired state.
    async fn sync_pod(
        &self,
        ctx: &SyncContext,
        update: UpdateType,
        pod: &Pod,
        status: &PodStatus,
    ) -> Result<SyncOutcome, SyncError>;

    /// Stops every container of the pod, giving each `grace_period` seconds, then its
    /// sandbox. `running_pod` is set for pods known only from the runtime. `status_fns`
    /// adjust the pod's API status once the termination succeeded.
    async fn sync_terminating_pod(
        &self,
        ctx: &SyncContext,
        pod: &Pod,
        status: &PodStatus,
        running_pod: Option<&RuntimePod>,
        grace_period: i64,
        status_fns: &[StatusFn],
    ) -> Result<(), SyncError>;

    /// Cleans up after a terminated pod: removes its containers, sandbox and directories.
    async fn sync_terminated_pod(
        &self,
        ctx: &SyncContext,
        pod: &Pod,
        status: &PodStatus,
    ) -> Result<(), SyncError>;
}
