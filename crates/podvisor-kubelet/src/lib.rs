//! The kubelet's machinery as podvisor actors. See ARCHITECTURE.md.
//!
//! Each actor is one module (`status_cache`, `pleg`, `pod_workers`, `sync_loop`,
//! `manifest_source`, `status_manager`, `prober`, and the image manager in `kuberuntime`); the
//! messages between them live in `protocol`, one file per edge (with `protocol::sync`, the
//! seam between the pod workers and the CRI syncer in `kuberuntime`).

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod agent;
mod api_status;
pub mod eviction;
pub mod groups;
pub mod image_gc;
pub mod kuberuntime;
pub mod log_rotation;
pub mod manifest_source;
pub mod metrics;
pub mod pleg;
pub mod pod_workers;
pub mod prober;
pub mod protocol;
pub mod stats;
pub mod status_cache;
pub mod status_manager;
pub mod sync_loop;
