//! The one interface every Kubernetes API podvisor talks to implements: the node's own
//! store (`podvisor_store::LocalClient`) and, in a cluster, a real kube-apiserver. It is
//! object-safe (objects travel as [`AnyObject`]); consumers use the typed [`crate::Api`]
//! over a [`Client`] and never see which backend answers.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::stream::BoxStream;
use podvisor_core::Kind;

use crate::error::{Error, Result};
use crate::object::AnyObject;
use crate::params::{DeleteParams, ListParams, Patch, PostParams, Subresource};

/// One object by name: its kind, its namespace (`None` for cluster-scoped kinds) and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    pub kind: Kind,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

/// Every object of a kind, or of a kind in one namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope<'a> {
    pub kind: Kind,
    pub namespace: Option<&'a str>,
}

/// One page of a list, with the version a watch resumes from.
#[derive(Debug, Clone)]
pub struct ObjectList<T> {
    pub items: Vec<T>,
    pub resource_version: String,
    /// Set when `limit` cut the list: pass it back to continue after the last item.
    pub continue_token: Option<String>,
}

/// One change a watch reports: an object that came into the watch's selection, changed
/// within it, or left it (deleted, or no longer selected), or a bookmark: everything up
/// to that version has been sent.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<T> {
    Added(T),
    Modified(T),
    Deleted(T),
    Bookmark(String),
}

impl<T> WatchEvent<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> WatchEvent<U> {
        match self {
            WatchEvent::Added(o) => WatchEvent::Added(f(o)),
            WatchEvent::Modified(o) => WatchEvent::Modified(f(o)),
            WatchEvent::Deleted(o) => WatchEvent::Deleted(f(o)),
            WatchEvent::Bookmark(v) => WatchEvent::Bookmark(v),
        }
    }

    pub fn object(&self) -> Option<&T> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o),
            WatchEvent::Bookmark(_) => None,
        }
    }
}

/// A watch's events until the server ends it; an `Err` item ends it too.
pub type WatchStream<T> = BoxStream<'static, Result<WatchEvent<T>>>;

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted<T> {
    /// Still there, marked with `deletionTimestamp` (a grace period, or finalizers).
    Marked(T),
    /// Gone: its last state.
    Gone(T),
}

impl<T> Deleted<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Deleted<U> {
        match self {
            Deleted::Marked(o) => Deleted::Marked(f(o)),
            Deleted::Gone(o) => Deleted::Gone(f(o)),
        }
    }

    pub fn into_inner(self) -> T {
        match self {
            Deleted::Marked(o) | Deleted::Gone(o) => o,
        }
    }
}

/// A Kubernetes API. Versions are opaque strings, as the API's `resourceVersion`s.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject>;

    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>>;

    /// Changes after `version`; from "" (or "0"), an ADDED event for every object first.
    /// `Gone` when the server no longer holds changes that old.
    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>>;

    /// Creates `object` in its own namespace.
    async fn create(&self, object: AnyObject, pp: &PostParams) -> Result<AnyObject>;

    /// Replaces `object` (or its status); a `resourceVersion` in it is a precondition.
    async fn replace(
        &self,
        object: AnyObject,
        sub: Subresource,
        pp: &PostParams,
    ) -> Result<AnyObject>;

    async fn patch(
        &self,
        t: Target<'_>,
        sub: Subresource,
        patch: &Patch,
        pp: &PostParams,
    ) -> Result<AnyObject>;

    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>>;

    /// Keeps a copy of `object`, whose truth is another API's (a cluster's pod bound to
    /// this node): its metadata and spec as given, admitted there, not here. An API that
    /// is itself the truth (kube-apiserver) does not take copies.
    async fn replicate(&self, object: AnyObject) -> Result<Option<AnyObject>> {
        Err(Error::BadRequest(format!(
            "this API keeps no copies of other APIs' objects (a {})",
            object.kind()
        )))
    }
}

/// A handle on one Kubernetes API, cheap to clone.
#[derive(Clone)]
pub struct Client(Arc<dyn Backend>);

impl Client {
    pub fn new(backend: impl Backend) -> Self {
        Self(Arc::new(backend))
    }

    pub fn backend(&self) -> &dyn Backend {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}
