//! podvisor's controllers: actors that watch objects through the typed client and act on
//! them, level-driven (each looks at the current objects and closes the gap, so a
//! restarted one rebuilds from the API and loses nothing).
//!
//! - [`taint_eviction`]: the NoExecute taint eviction scheduler for this node.
//! - [`replicaset`]: the ReplicaSet controller, keeping declared replicas running here.
//! - [`deployment`]: the Deployment controller, rolling templates out through ReplicaSets.
//! - [`job`]: the Job controller, running pods to completion with tracked counts.
//! - [`accounts`]: each namespace's `default` ServiceAccount and `kube-root-ca.crt`, and
//!   the default RBAC policy (standalone).

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod accounts;
pub mod clock;
pub mod deployment;
pub mod job;
mod owners;
pub mod replicaset;
pub mod taint_eviction;
