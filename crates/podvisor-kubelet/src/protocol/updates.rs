//! What the sync loop (its event handling and housekeeping) asks of the pod workers: the
//! kubelet's `UpdatePod`, and `SyncKnownPods`, which forgets finished pods.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use actix::Message;
use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_core::{GracePeriod, PodExt, PodUid, SharedPod};
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The kubelet's `UpdatePod`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct UpdatePod(pub UpdatePodOptions);

/// Forgets finished pods not in the set (the desired pods) and reports every known pod's
/// state.
#[derive(Message)]
#[rtype(result = "BTreeMap<PodUid, PodWorkerState>")]
pub struct SyncKnownPods(pub HashSet<PodUid>);

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

impl UpdateType {
    /// The kubelet's name for it (`kubelet_pod_worker_duration_seconds{operation_type}`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Sync => "sync",
            Self::Kill => "kill",
        }
    }
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
    pub grace_period_override: Option<GracePeriod>,
    /// Fired once the pod has terminated (or at once, when there is nothing to kill).
    pub completed: Option<oneshot::Sender<()>>,
    pub status_fn: Option<StatusFn>,
}

impl KillPodOptions {
    /// Fires the completion channel, if any: the kill is done (or was never needed).
    pub fn complete(self) {
        if let Some(tx) = self.completed {
            let _ = tx.send(());
        }
    }
}

impl fmt::Debug for KillPodOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
pub struct RuntimePod {
    uid: PodUid,
    pod: podvisor_cri::Pod,
}

impl RuntimePod {
    pub fn new(pod: podvisor_cri::Pod) -> Self {
        Self {
            uid: PodUid::from(pod.pod.uid.as_str()),
            pod,
        }
    }

    pub fn uid(&self) -> &PodUid {
        &self.uid
    }

    /// The runtime's record of the pod: its sandboxes and containers.
    pub fn runtime(&self) -> &podvisor_cri::Pod {
        &self.pod
    }

    /// A stand-in API pod, for the state that wants one.
    pub fn stand_in(&self) -> SharedPod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(self.uid.to_string());
        pod.metadata.name = Some(self.pod.pod.name.clone());
        pod.metadata.namespace = Some(self.pod.pod.namespace.clone());
        SharedPod::new(pod).expect("a stand-in has the runtime's UID")
    }
}

#[derive(Debug, Default)]
pub struct UpdatePodOptions {
    pub update_type: Option<UpdateType>,
    /// The desired pod; `None` for a runtime-only pod.
    pub pod: Option<SharedPod>,
    pub running_pod: Option<RuntimePod>,
    pub kill: Option<KillPodOptions>,
    /// When the change was first requested (for latency figures).
    pub start_time: Option<Instant>,
}

impl UpdatePodOptions {
    pub fn new(update_type: UpdateType, pod: SharedPod) -> Self {
        Self {
            update_type: Some(update_type),
            pod: Some(pod),
            start_time: Some(Instant::now()),
            ..Default::default()
        }
    }

    pub fn kill(pod: SharedPod, kill: KillPodOptions) -> Self {
        Self {
            kill: Some(kill),
            ..Self::new(UpdateType::Kill, pod)
        }
    }

    pub fn runtime_kill(running: RuntimePod) -> Self {
        Self {
            update_type: Some(UpdateType::Kill),
            running_pod: Some(running),
            start_time: Some(Instant::now()),
            ..Default::default()
        }
    }

    /// The pod this update is about (the runtime pod's, for a runtime-only kill).
    pub fn uid(&self) -> Option<&PodUid> {
        self.pod
            .as_ref()
            .map(SharedPod::uid)
            .or_else(|| self.running_pod.as_ref().map(RuntimePod::uid))
    }

    /// The pod's name, for logs.
    pub fn name(&self) -> &str {
        self.pod.as_ref().map_or_else(
            || {
                self.running_pod
                    .as_ref()
                    .map_or("", |r| r.pod.pod.name.as_str())
            },
            |p| p.name(),
        )
    }
}

/// A pod's place in its lifecycle, as `SyncKnownPods` reports it.
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
