//! The node agent on its store: what connects the kubelet's actors (`podvisor-kubelet`),
//! which know nothing of the store, to the store (`podvisor-store`), as the kubelet's
//! API-server source, status manager sync and node registration connect it to
//! kube-apiserver.
//!
//! - [`source::ApiPodSource`]: pods bound to this node, from a store watch, as the sync
//!   loop's `api` config source (full snapshots, level-driven).
//! - [`status::StatusWriter`]: every status change of an API pod written back through the
//!   status subresource; a deleted pod removed once its termination completed; static pods
//!   shown as read-only mirror pods.
//! - [`node::NodeRegistrar`]: this node as a Node object, kept current.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod cluster;
pub mod node;
pub mod podset;
pub mod source;
pub mod status;

/// The sync loop's name for pods from the store.
pub const SOURCE: &str = "api";

pub use podvisor_core::pod::MIRROR_ANNOTATION;
