//! One typed client for every reader and writer of Kubernetes objects in podvisor, in
//! kube-rs' shape.
//!
//! - [`Api<K>`]: get, list, watch, create, replace, patch (JSON, merge, strategic), their
//!   status variants, and delete, for one kind in one namespace or all, answering `Arc<K>`
//!   (decoded once by the backend, shared with every other holder) or a typed [`Error`].
//! - [`Backend`]: what answers, behind a [`Client`] handle: the node's own store
//!   (`podvisor_store::LocalClient`) or, in a cluster, a real kube-apiserver. Consumers
//!   (the API pod source, the status writer, the node registrar, the event recorder, the
//!   controllers) hold a `Client` and never know which.
//! - [`contract`] (feature `contract`): what every backend must do, run against each.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod api;
mod backend;
#[cfg(feature = "contract")]
pub mod contract;
mod error;
pub mod merge_keys;
mod object;
mod params;
pub mod selector;
pub mod unknown;

pub use api::Api;
pub use backend::{Backend, Client, Deleted, ObjectList, Scope, Target, WatchEvent, WatchStream};
pub use error::{Error, Result};
pub use object::{AnyObject, Object, ObjectExt, count_decode, decodes_on_this_thread};
pub use params::{DeleteParams, ListParams, Patch, PostParams, Propagation, Subresource};
pub use selector::{FieldSelector, LabelSelector};
