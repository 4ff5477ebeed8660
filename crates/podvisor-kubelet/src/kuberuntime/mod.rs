//! The real sync functions over CRI (the kubelet's `kuberuntime` manager): what to do
//! (`actions.rs`, pure), how to describe sandboxes and containers to the runtime
//! (`config.rs`), and doing it (`syncer.rs`).

pub mod actions;
pub mod config;
pub mod images;
pub mod syncer;
