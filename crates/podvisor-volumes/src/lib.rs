//! What a pod's spec asks of the node's API objects, made real on the node as the
//! kubelet makes it:
//!
//! - volumes (`volumes.rs`, `setup.rs`): configMap, secret, downwardAPI and projected
//!   (configMap, secret, downwardAPI and serviceAccountToken sources), with `items`,
//!   modes and `optional`; secrets, tokens and the downward API on a tmpfs; every version
//!   written atomically through a `..data` symlink (`writer.rs`);
//! - the container environment (`env.rs`): `envFrom`, `valueFrom` (configMap and secret
//!   keys, the downward API: `downward.rs`) and `$(VAR)` expansion.
//!
//! The objects come from an [`ObjectSource`] (`source.rs`): the node's own store
//! standalone, the kube-apiserver in a cluster (cached, and answering from the cache while
//! the cluster is away), tokens from a [`TokenIssuer`]. A volume set up before keeps its
//! files while the API cannot be reached.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod downward;
mod env;
mod error;
mod keep;
mod payload;
mod services;
mod setup;
mod source;
#[cfg(test)]
mod testing;
mod tokens;
mod volumes;
mod writer;

pub use downward::PodFacts;
pub use env::{Environment, container_env, is_env_name};
pub use error::{SourceError, VolumeError};
pub use keep::Keep;
pub use payload::{DEFAULT_MODE, FileProjection, Payload};
pub use podvisor_core::fit::Allocatable;
pub use setup::{prepare_dir, set_up};
pub use source::{NoObjects, ObjectSource, Objects, ServiceLister, TokenIssuer, TokenSpec};
pub use tokens::{IssuedToken, TokenCache};
pub use volumes::{in_memory, payload, volume_dir};
