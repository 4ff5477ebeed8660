//! What the CRI syncer does to the runtime, one verb per file (the model is youki's one file
//! per runtime command): stop a pod's containers and sandboxes with their preStop hooks, in
//! the pod's termination order (`kill.rs`, `order.rs`), create a sandbox (`sandbox.rs`),
//! start one container (`start.rs`) with its environment and the pod's object volumes
//! (`objects.rs`) and run its postStart hook (`post_start.rs`), remove
//! everything of a pod (`remove.rs`), and make or sweep a pod's directories (`dirs.rs`).
//! `sync_pod` runs the plan's steps through them.

mod dirs;
mod kill;
mod objects;
mod order;
mod post_start;
mod remove;
mod resize;
mod sandbox;
mod start;

use podvisor_cri::proto::PodSandboxConfig;

pub(crate) use kill::{Stop, pod_ip, running_of, running_of_listing};
pub use objects::PodObjects;
pub(crate) use start::{Target, Waits, backoff_ends_in, container_of};

/// The sandbox a sync starts containers in.
pub(crate) struct SandboxInfo {
    pub id: String,
    pub ip: Option<String>,
    pub config: PodSandboxConfig,
}
