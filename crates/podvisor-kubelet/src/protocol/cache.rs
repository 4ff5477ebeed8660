//! The status cache and its users: the PLEG fills it; pod workers wait on it for status
//! newer than their last sync; the status manager subscribes to every change.

use std::sync::Arc;

use actix::Message;
use podvisor_core::PodUid;
use podvisor_cri::{CriError, PodRef, PodStatus};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The pod's cached status (empty if unknown).
#[derive(Message)]
#[rtype(result = "CachedStatus")]
pub struct GetStatus {
    pub uid: PodUid,
}

/// Stores a pod's status (or the error inspecting it gave) as of `at`, unless something
/// newer is held. Answers whether it stored.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct SetStatus {
    pub uid: PodUid,
    pub status: Result<Arc<PodStatus>, Arc<CriError>>,
    pub at: Instant,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct DeleteStatus {
    pub uid: PodUid,
}

/// Every pod's data is at least as fresh as this (the start of a completed relist).
#[derive(Message)]
#[rtype(result = "()")]
pub struct UpdateTime(pub Instant);

/// Subscribes for data newer than `need.min` (`None`: any data, or any completed relist),
/// or data showing that container `need.showing` started (running, or exited since): the
/// last change a sync made, which the runtime's event for it shows in a snapshot stamped
/// before the sync ended. The answer is a receiver that resolves at once if such data is
/// held, else when a later `SetStatus` or `UpdateTime` provides it; it fails at once if
/// the cache restarts meanwhile.
#[derive(Message)]
#[rtype(result = "oneshot::Receiver<CachedStatus>")]
pub struct GetNewerThan {
    pub uid: PodUid,
    pub need: Need,
}

/// What a waiter needs of a pod's status: data newer than `min`, or data showing that
/// container `showing` started.
#[derive(Debug, Clone, Default)]
pub struct Need {
    pub min: Option<Instant>,
    pub showing: Option<ContainerId>,
}

impl Need {
    /// Data newer than `min`, whatever it shows.
    pub fn newer_than(min: Option<Instant>) -> Self {
        Self { min, showing: None }
    }
}

impl From<Option<Instant>> for Need {
    fn from(min: Option<Instant>) -> Self {
        Self::newer_than(min)
    }
}

/// A container, by the runtime's id for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerId(pub String);

impl ContainerId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `status` shows this container started: running, or exited since.
    pub fn started_in(&self, status: &PodStatus) -> bool {
        status.containers.iter().any(|c| {
            c.id == self.0
                && matches!(
                    c.state,
                    podvisor_cri::ContainerState::Running | podvisor_cri::ContainerState::Exited
                )
        })
    }
}

/// Sent to the cache's subscribers whenever it stores a pod's status.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct StatusChanged {
    pub uid: PodUid,
    pub data: CachedStatus,
}

/// What the cache holds for one pod: the runtime's status as of `modified`, or the error
/// that inspecting it gave.
#[derive(Debug, Clone)]
pub struct CachedStatus {
    pub status: Arc<PodStatus>,
    pub error: Option<Arc<CriError>>,
    pub modified: Option<Instant>,
}

impl CachedStatus {
    /// What an unknown pod looks like: no sandboxes, no containers, no error.
    pub fn empty(uid: &PodUid) -> Self {
        Self {
            status: Arc::new(PodStatus {
                pod: PodRef {
                    uid: uid.to_string(),
                    ..Default::default()
                },
                ..Default::default()
            }),
            error: None,
            modified: None,
        }
    }
}
