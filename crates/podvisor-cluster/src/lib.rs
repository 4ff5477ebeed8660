//! podvisor's client of a real kube-apiserver: [`RemoteClient`] is a
//! [`podvisor_client::Backend`] over kube-rs' `kube::Client`, so the node's actors and
//! controllers talk to a cluster through the same typed `Api<K>` as to the node's own store,
//! and the same contract suite (`podvisor_client::contract`) holds for both.
//!
//! kube-rs does the HTTP, TLS (rustls, as the rest of podvisor), kubeconfig and credential
//! handling. Every request, whichever module makes it, is a typed `kube::Api<K>` call on
//! the one `RemoteClient` connection (the `Backend`'s verbs pick `K` by kind from the table
//! of kinds), and every failure goes through one mapping of kube-rs' errors onto
//! [`podvisor_client::Error`] (`error::from_kube`).

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod bootstrap;
mod error;
mod join;
pub mod lease;
mod remote;
mod reviews;
pub mod rotation;
mod services;
mod serving;
mod skew;
mod tokens;

pub use bootstrap::{BootstrapError, node_credentials};
pub use error::ConnectError;
pub use join::{Joined, join};
pub use lease::NodeLease;
pub use remote::RemoteClient;
pub use reviews::{ClusterReviews, cluster_ca_pem};
pub use rotation::{CertRotation, Rotation};
pub use services::ClusterServices;
pub use serving::{Issued, Serving};
pub use skew::skew;
pub use tokens::ClusterTokens;
