//! The status manager's inputs (what syncs saw and did, admission's refusals, events), what
//! it starts from (the statuses the API holds), and what the sync loop asks of it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use actix::Message;
use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_core::{Phase, PodUid, SharedPod};
use serde::{Deserialize, Serialize};

use super::updates::StatusFn;

/// A sync looked at the pod: why some of its containers wait (their runtime status comes
/// from the status cache, which the status manager follows).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodSynced {
    pub pod: SharedPod,
    pub waiting: HashMap<String, Waiting>,
    /// Why the sync could not resize the pod's containers in place, if it could not: the
    /// `PodResizeInProgress` condition's `Error`.
    pub resize_error: Option<String>,
}

/// The pod's termination completed; `status_fns` adjust its final status.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodTerminated {
    pub pod: SharedPod,
    pub status_fns: Vec<StatusFn>,
}

/// Admission refused the pod: it is Failed with this reason and runs nothing.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodRejected {
    pub pod: SharedPod,
    pub reason: &'static str,
    pub message: String,
}

/// Something happened to the pod (the kubelet's events: Created, Started, Killing,
/// BackOff, Failed...). Carries the pod, so an event of a pod's first sync is kept even
/// before its first status.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct RecordEvent {
    pub pod: SharedPod,
    pub kind: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// What the status manager tells whoever mirrors statuses to an API server (the node's
/// store): a pod's status changed, something happened to it, or it is gone for good.
#[derive(Message)]
#[rtype(result = "()")]
pub enum PublishedStatus {
    Changed {
        /// The pod as it was given: the copy the sync loop holds, not this status's (an
        /// API pod's own `status` is the API's as last read).
        pod: Arc<Pod>,
        /// Its new status.
        status: Arc<ApiPodStatus>,
        /// Its termination has completed (or it never ran): a deleted pod may be removed.
        terminated: bool,
    },
    /// An event was recorded for the pod.
    Event { pod: Arc<Pod>, event: PodEvent },
    /// Gone for good; with the pod as last known, when it was (a static pod's mirror
    /// names it).
    Gone { uid: PodUid, pod: Option<Arc<Pod>> },
}

/// Publish every status held again: what a restarted mirror of the statuses (the status
/// writer) asks for, since it rebuilds from the status manager, not from its own memory.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RepublishStatuses;

/// The pod is gone for good: forget its status.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetPod {
    pub uid: PodUid,
}

/// Housekeeping's list of every pod still known (in config, or being stopped): statuses of
/// any other pod are dropped. This is what clears statuses remembered from before a
/// restart for pods whose manifests went away meanwhile.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RetainPods(pub HashSet<PodUid>);

/// Every pod whose last known phase is terminal (Succeeded or Failed), with that phase: a
/// pod that completed before an agent restart must not run again. The sync loop asks once
/// as it starts.
#[derive(Message)]
#[rtype(result = "HashMap<PodUid, Phase>")]
pub struct FinishedPods;

/// Every status the node's API holds for its pods, as the pods the kubelet runs: an API
/// pod as it is, a static pod's mirror under the static pod's UID. What the status manager
/// starts from; the API is the one durable copy of every status.
#[derive(Message)]
#[rtype(result = "Vec<Arc<Pod>>")]
pub struct PriorStatuses;

/// Why a container is not running, as the kubelet says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WaitingReason {
    ContainerCreating,
    PodInitializing,
    CrashLoopBackOff,
    ErrImagePull,
    ImagePullBackOff,
    ErrImageNeverPull,
    CreateContainerConfigError,
    CreateContainerError,
    /// The container's postStart hook failed; it is restarted as its policy says.
    PostStartHookError,
}

impl WaitingReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContainerCreating => "ContainerCreating",
            Self::PodInitializing => "PodInitializing",
            Self::CrashLoopBackOff => "CrashLoopBackOff",
            Self::ErrImagePull => "ErrImagePull",
            Self::ImagePullBackOff => "ImagePullBackOff",
            Self::ErrImageNeverPull => "ErrImageNeverPull",
            Self::CreateContainerConfigError => "CreateContainerConfigError",
            Self::CreateContainerError => "CreateContainerError",
            Self::PostStartHookError => "PostStartHookError",
        }
    }
}

impl fmt::Display for WaitingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a container is not running, as the last sync found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    pub reason: WaitingReason,
    pub message: String,
    /// The instance this is about, when it is about one that runs (its postStart hook has
    /// not finished: it is not Running yet); `None` for a container that does not run.
    #[serde(default)]
    pub instance: Option<String>,
}

impl Waiting {
    pub fn new(reason: WaitingReason, message: String) -> Self {
        Self {
            reason,
            message,
            instance: None,
        }
    }
}

pub use podvisor_core::EventType;

/// How many events are kept per pod.
pub const MAX_EVENTS: usize = 25;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodEvent {
    /// Milliseconds since the epoch of the last occurrence.
    pub time_unix_ms: u64,
    pub kind: EventType,
    pub reason: String,
    pub message: String,
    pub count: u32,
}

/// What the status manager holds of a pod: the pod as it was given (the one copy the sync
/// loop and its worker share; its own `status` is not the node's), the status the node
/// computed for it, and its recent events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodRecord {
    pub pod: Arc<Pod>,
    #[serde(default)]
    pub status: Option<Arc<ApiPodStatus>>,
    #[serde(default)]
    pub events: Vec<PodEvent>,
}

impl PodRecord {
    /// A record of `pod` with no status of the node's yet.
    pub fn new(pod: Arc<Pod>) -> Self {
        Self {
            pod,
            status: None,
            events: Vec::new(),
        }
    }

    /// A record of a pod as the API holds it: its status is the one the node last wrote.
    pub fn from_api(pod: Arc<Pod>) -> Self {
        let status = pod.status.clone().map(Arc::new);
        Self {
            pod,
            status,
            events: Vec::new(),
        }
    }

    /// The phase of the node's status.
    pub fn phase(&self) -> Option<Phase> {
        self.status.as_ref()?.phase.as_deref()?.parse().ok()
    }

    /// Adds an event, counting it with the last one if it says the same; keeps the newest
    /// [`MAX_EVENTS`].
    pub fn record_event(&mut self, event: PodEvent) {
        if let Some(last) = self.events.last_mut()
            && last.reason == event.reason
            && last.message == event.message
        {
            last.count += 1;
            last.time_unix_ms = event.time_unix_ms;
            return;
        }
        self.events.push(event);
        if self.events.len() > MAX_EVENTS {
            self.events.remove(0);
        }
    }
}
