//! The pod-workers dispatcher and one pod's worker: the work it is handed, and its report
//! on how the work ended.

use std::fmt;
use std::sync::Arc;

use actix::Message;
use podvisor_actors::MailboxError;
use podvisor_core::{GracePeriod, PodUid, SharedPod};
use podvisor_cri::CriError;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::sync::{SyncError, SyncOutcome};
use super::updates::{RuntimePod, StatusFn, UpdateType};

/// Run this work; the token fires if newer work makes it pointless.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Work(pub PodWork, pub CancellationToken);

/// A worker's report on the work it was given.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct WorkDone {
    pub uid: PodUid,
    pub seq: u64,
    pub result: WorkResult,
}

/// A worker restarted and lost the work it was running.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct WorkerRestarted {
    pub uid: PodUid,
    /// How many times it was restarted so far.
    pub restarts: u64,
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
    pub pod: SharedPod,
    pub running_pod: Option<RuntimePod>,
    /// For terminating work: the effective grace period.
    pub grace_period: Option<GracePeriod>,
    pub status_fns: Vec<StatusFn>,
}

impl fmt::Debug for PodWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PodWork")
            .field("seq", &self.seq)
            .field("kind", &self.kind)
            .field("update_type", &self.update_type)
            .field("pod", self.pod.uid())
            .field("runtime_only", &self.running_pod.is_some())
            .field("grace_period", &self.grace_period)
            .finish()
    }
}

/// How a delivered work item ended.
#[derive(Debug, Clone)]
pub enum WorkResult {
    Ok(SyncOutcome),
    /// The work failed: retried after the backoff period.
    Failed(Arc<WorkError>),
    /// Cancelled because the pod started terminating or its grace period shrank; the newer
    /// work is already waiting. Not an error.
    Cancelled,
}

impl WorkResult {
    pub fn failed(e: impl Into<WorkError>) -> Self {
        Self::Failed(Arc::new(e.into()))
    }
}

/// Why work failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The pod's runtime status could not be had, so nothing was attempted.
    #[error(transparent)]
    Status(#[from] StatusUnavailable),
    /// A sync function failed.
    #[error(transparent)]
    Sync(#[from] SyncError),
    /// The work never reached a worker.
    #[error(transparent)]
    Undelivered(#[from] Undelivered),
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StatusUnavailable {
    #[error("status cache unavailable: {0}")]
    CacheGone(#[from] MailboxError),
    #[error("status cache restarted while waiting")]
    CacheRestarted,
    #[error("inspecting the pod failed: {0}")]
    Inspection(Arc<CriError>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Undelivered {
    #[error("no pod worker could be started")]
    NoWorker,
    #[error("its worker's mailbox is full")]
    MailboxFull,
    #[error("its worker has stopped")]
    WorkerGone,
}
