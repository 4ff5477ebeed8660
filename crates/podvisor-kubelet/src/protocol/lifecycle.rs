//! The PLEG's output and its on-demand inspection: lifecycle events for the sync loop, and
//! `Reinspect` from a pod worker that just changed its pod.

use actix::Message;
use podvisor_core::PodUid;
use podvisor_cri::CriError;
use serde::Serialize;

use super::cache::ContainerId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PlegEventKind {
    ContainerStarted,
    ContainerDied,
    ContainerRemoved,
    /// A container's state is neither running nor exited (created, unknown).
    ContainerChanged,
    /// The pod's sandboxes changed and none of its containers did.
    PodSync,
}

/// What the PLEG tells its subscribers (the sync loop): look at pod `uid` now.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
#[rtype(result = "()")]
pub struct PodLifecycleEvent {
    pub uid: PodUid,
    pub kind: PlegEventKind,
    /// The container's id (the sandbox's, for `PodSync`).
    pub id: String,
    /// The container's name (empty for `PodSync`).
    pub container: String,
}

/// Relist now; answers when the relist is done.
#[derive(Message)]
#[rtype(result = "Result<RelistReport, PlegError>")]
pub struct RelistNow;

/// Inspect one pod now: store its status in the cache and emit its events. With
/// `started`, the change the sync made last was starting that container: a pod whose
/// records already show it started (its event's snapshot came first, as it mostly does)
/// needs no inspection, since that status is in the cache and its events are out.
#[derive(Message)]
#[rtype(result = "Result<(), PlegError>")]
pub struct Reinspect {
    pub uid: PodUid,
    pub started: Option<ContainerId>,
}

impl Reinspect {
    /// An inspection whatever the records show.
    pub fn pod(uid: PodUid) -> Self {
        Self { uid, started: None }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum PlegError {
    #[error("relist failed: {0}")]
    List(CriError),
    #[error("inspecting pod {uid} failed: {error}")]
    Inspect { uid: PodUid, error: CriError },
    #[error("the PLEG stopped before finishing")]
    Stopped,
}

/// What one relist did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelistReport {
    pub pods: usize,
    pub inspected: usize,
    pub failed: usize,
    pub events: usize,
}
