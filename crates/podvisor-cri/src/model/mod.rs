//! What the kubelet logic sees of the runtime: pods made of sandboxes and containers, and
//! their statuses, in plain Rust types. Configs going *into* the runtime stay CRI messages
//! ([`crate::proto::PodSandboxConfig`], [`crate::proto::ContainerConfig`]): copying them
//! would add a second schema to keep in step with the first.
//!
//! Timestamps are nanoseconds since the Unix epoch, as CRI reports them.

use std::collections::BTreeMap;

use crate::proto;

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVersion {
    pub runtime_name: String,
    pub runtime_version: String,
    pub runtime_api_version: String,
}

/// One of the runtime's health conditions (`RuntimeReady`, `NetworkReady`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeCondition {
    pub kind: String,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxState {
    Ready,
    NotReady,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerState {
    Created,
    Running,
    Exited,
    Unknown,
}

/// Identity of a pod as the runtime records it (sandbox metadata).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodRef {
    pub uid: String,
    pub name: String,
    pub namespace: String,
}

/// A sandbox as listed: what podvisor reads of a listing (no network details; of its
/// labels, only its owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub id: String,
    pub pod: PodRef,
    pub attempt: u32,
    pub state: SandboxState,
    pub created_at: i64,
    /// The node whose agent made it ([`crate::labels::MANAGED_BY`]); `None` for a sandbox
    /// podvisor did not make.
    pub managed_by: Option<String>,
}

/// A container as listed: ids, name, state, and the little podvisor reads back of its
/// labels and annotations (no image, no exit code, no times beyond creation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    pub sandbox_id: String,
    pub name: String,
    pub attempt: u32,
    pub state: ContainerState,
    pub created_at: i64,
    /// The node whose agent made it ([`crate::labels::MANAGED_BY`]).
    pub managed_by: Option<String>,
    /// The grace period, in seconds, of the pod it was made for
    /// ([`crate::labels::GRACE_PERIOD`]): what stops it when no spec is at hand.
    pub grace_period: Option<i64>,
    /// The pod its labels name (`io.kubernetes.pod.*`), read only when the same listing
    /// did not show its sandbox (one left by a half-finished teardown, or made between
    /// the two list calls): the one case where nothing else names its pod.
    pub labelled_pod: Option<PodRef>,
}

/// The ids one listing showed of a pod: enough to inspect it with status calls alone
/// ([`crate::Runtime::pod_status_listed`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedIds {
    pub sandboxes: Vec<String>,
    /// Each container's id and its sandbox's.
    pub containers: Vec<(String, String)>,
}

/// The runtime's record of one pod: every sandbox and container carrying its UID,
/// including exited and not-ready ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pod {
    pub pod: PodRef,
    pub sandboxes: Vec<Sandbox>,
    pub containers: Vec<Container>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxStatus {
    pub id: String,
    pub pod: PodRef,
    pub attempt: u32,
    pub state: SandboxState,
    pub created_at: i64,
    /// Primary pod IP; `None` with host networking or before the network is set up.
    pub ip: Option<String>,
    pub additional_ips: Vec<String>,
    pub host_network: bool,
    pub labels: Labels,
    pub annotations: Labels,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerStatus {
    pub id: String,
    /// The sandbox it belongs to (from the listing: CRI's status call does not say).
    pub sandbox_id: String,
    pub name: String,
    pub attempt: u32,
    pub state: ContainerState,
    pub created_at: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub exit_code: i32,
    pub image: String,
    pub image_ref: String,
    pub reason: String,
    pub message: String,
    pub labels: Labels,
    pub annotations: Labels,
    pub log_path: String,
    /// The identity its process runs as, when the runtime says (CRI's status call).
    pub user: Option<ContainerUser>,
    /// The resources it runs with now, when the runtime says (CRI's status call; an
    /// in-place resize changes them).
    pub resources: Option<ContainerResources>,
}

/// A container's CPU and memory on Linux, as the runtime applies them: CPU weight
/// (shares), quota over period (0: none), memory limit in bytes (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContainerResources {
    pub cpu_shares: i64,
    pub cpu_quota: i64,
    pub cpu_period: i64,
    pub memory_limit: i64,
}

/// A container's process identity on Linux, as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerUser {
    pub uid: i64,
    pub gid: i64,
    pub supplemental_groups: Vec<i64>,
}

/// Everything the runtime knows about one pod, as the PLEG caches it. Sandboxes and
/// containers are sorted newest first, so index 0 is the current attempt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodStatus {
    pub pod: PodRef,
    pub ips: Vec<String>,
    pub sandboxes: Vec<SandboxStatus>,
    pub containers: Vec<ContainerStatus>,
}

impl PodStatus {
    /// Assembles a pod's status from everything the runtime holds for `uid`: sorts newest
    /// first and takes the pod's identity and IPs from the newest sandbox (IPs only while
    /// it is ready: a stopped sandbox's address may already belong to another pod).
    pub fn assemble(
        uid: &str,
        mut sandboxes: Vec<SandboxStatus>,
        mut containers: Vec<ContainerStatus>,
    ) -> Self {
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        let pod = sandboxes
            .first()
            .map(|s| s.pod.clone())
            .unwrap_or_else(|| PodRef {
                uid: uid.to_string(),
                ..Default::default()
            });
        let ips = sandboxes
            .first()
            .filter(|s| s.state == SandboxState::Ready)
            .map(|s| s.ip.iter().chain(&s.additional_ips).cloned().collect())
            .unwrap_or_default();
        Self {
            pod,
            ips,
            sandboxes,
            containers,
        }
    }

    /// The newest status of the container named `name`, if it ever ran.
    pub fn container(&self, name: &str) -> Option<&ContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub id: String,
    pub repo_tags: Vec<String>,
    pub repo_digests: Vec<String>,
    pub size: u64,
    /// The runtime keeps it whatever garbage collection decides (containerd pins the
    /// sandbox image).
    pub pinned: bool,
    /// The user the image runs as (its `USER`): a numeric UID, or a name (empty: none
    /// given, which is root).
    pub user: ImageUser,
}

/// An image's `USER`, as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageUser {
    Uid(i64),
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerEventKind {
    Created,
    Started,
    Stopped,
    Deleted,
}

/// One event of the runtime's container event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEvent {
    pub container_id: String,
    pub kind: ContainerEventKind,
    pub created_at: i64,
    /// The pod the container belongs to, when the runtime says.
    pub pod: Option<PodRef>,
    /// Its sandbox's labels, when the runtime says (who owns the pod: `labels::owned_by`).
    pub pod_labels: Labels,
    /// What the runtime sent along: the container's sandbox and that sandbox's containers
    /// as they were when the event was made (containerd 1.7 and 2.x send them; the
    /// kubelet's evented PLEG caches them as the pod's status). Only that one sandbox:
    /// a pod's older sandboxes are not in it.
    pub snapshot: Option<Box<PodStatus>>,
}

// ---- conversions from CRI messages -------------------------------------------------------

mod auth;
mod convert;
mod termination;

pub use auth::RegistryAuth;

pub use convert::group_pods;

mod streams;
mod usage;

pub use streams::{StreamIo, StreamRequest};

pub use usage::{ContainerUsage, CpuSample, FsSample, InterfaceSample, MemorySample, SandboxUsage};
