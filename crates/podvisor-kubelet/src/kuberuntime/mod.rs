//! The real sync functions over CRI (the kubelet's `kuberuntime` manager): what to do
//! (`actions.rs`, pure: the plan and its steps), how to describe sandboxes and containers
//! to the runtime (`config/`), doing it (`syncer.rs` running the steps through the verbs
//! in `verbs/`), the image manager, and sweeping what dead pods left (`cleanup.rs`), subPath mounts that cannot
//! leave their volume (`subpath.rs`).

pub mod actions;
pub mod cleanup;
pub mod config;
pub mod images;
mod init_actions;
pub mod subpath;
pub mod syncer;
mod verbs;
