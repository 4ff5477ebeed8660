//! The real sync functions over CRI (the kubelet's `kuberuntime` manager): what to do
//! (`actions/`, pure: the plan and its steps), how to describe sandboxes and containers
//! to the runtime (`config/`), doing it (`syncer/`, running the steps through its verbs,
//! one file each), the image manager, sweeping what dead pods left (`cleanup.rs`), and
//! subPath mounts that cannot leave their volume (`subpath.rs`).

pub mod actions;
pub mod cleanup;
pub mod config;
pub mod images;
pub(crate) mod keyring;
pub mod pod_cgroups;
mod pod_cgroups_sweep;
mod pod_cgroups_v2;
pub mod subpath;
pub mod syncer;
