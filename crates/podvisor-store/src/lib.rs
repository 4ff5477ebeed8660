//! podvisor's durable object store: the desired state that the API serves and the
//! controllers and the kubelet's API source read.
//!
//! Objects are Kubernetes objects kept as their JSON (what the API serves, byte for byte),
//! with the few fields selectors need parsed beside them. Every write is one redb
//! transaction, committed durably before it is acknowledged, and carries the next value of
//! a global revision: that revision is the object's `resourceVersion`, and a write that
//! names an older one is refused (409). Each write also appends to a change log of bounded
//! length, kept in the same transaction, so a watch resumes from any revision the window
//! still holds, across restarts of the agent; older ones get 410 Gone and relist.
//!
//! Writes take typed objects (`podvisor_client::AnyObject`), decoded once by whoever wrote
//! them; admission checks run on them, and patches are applied inside the write. The store
//! keeps no typed form: a typed read (a local get, list or watch) decodes the JSON, and most
//! objects are only ever served as JSON.
//!
//! [`Store`] is a plain struct (tested without actix); [`actor::StoreActor`] owns one and
//! fans changes out to watchers through bounded channels: a watcher that does not keep up
//! is cut off (its stream ends, it re-watches from its last revision), so no watcher can
//! grow the agent's memory. [`LocalClient`] is the store as a `podvisor_client::Backend`.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod actor;
pub mod admission;
mod apply;
mod client;
mod db;
pub mod decode;
mod delete;
mod error;
mod kinds;
mod meta;
pub mod object;
mod page;
pub mod patch;
mod patching;
pub mod replicate;
pub mod selector;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use actor::StoreActor;
pub use admission::{Admission, Objects};
pub use client::LocalClient;
pub use meta::MAX_OBJECT_BYTES;
pub use object::{Change, ChangeType, OwnerRef, RBAC, Resource, StoredObject};
pub use page::ListPage;
pub use selector::Selector;
pub use store::{Store, StoreConfig, WINDOW_FRESH, WINDOW_MIN};
