//! podvisor's Kubernetes-compatible API: an unmodified kubectl (or any client library)
//! manages the node through it.
//!
//! Every request is served from the store actor (`podvisor-store`): discovery so clients
//! know what is served; get, list (selectors, `limit`/`continue`), watch (from a
//! resourceVersion, bookmarks, timeouts), create, update, patch (JSON patch, merge patch,
//! strategic merge patch), delete (grace periods, preconditions, propagation) for pods,
//! nodes, namespaces, configmaps, secrets, events and replicasets, with pods' `status`,
//! `log` and `eviction`, and replicasets' `status` and `scale`. Errors are `metav1.Status`;
//! tables carry kubectl's columns. It listens on HTTPS with a certificate of its own CA and
//! requires the bearer token written into `<state_dir>/kubeconfig`.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod access;
pub mod admission;
pub mod cluster_owned;
pub mod defaults;
mod discovery;
mod ephemeral;
mod handlers;
pub mod nodefit;
mod openapi;
mod openapi_schemas;
mod openapi_v2;
pub mod pod_security;
mod proto;
mod resize;
pub mod resource_metrics;
mod server;
pub mod service_accounts;
pub mod status;
mod streams;
mod table;
mod target;
pub mod tls;
mod validate;
mod workloads;

pub use access::Accounts;
pub use admission::{NodeInfo, ObjectAdmission};
pub use handlers::{ApiState, UsageSource};
pub use server::{ApiConfig, ApiServer, ApiServerError, MAX_BODY_BYTES};
