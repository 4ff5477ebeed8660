//! The real sync functions over CRI (the kubelet's `kuberuntime` manager): what to do
//! (`actions.rs`, pure), how to describe sandboxes and containers to the runtime
//! (`config.rs`), doing it (`syncer.rs`), and sweeping what dead pods left (`cleanup.rs`).

pub mod actions;
pub mod cleanup;
pub mod config;
pub mod images;
pub mod syncer;
