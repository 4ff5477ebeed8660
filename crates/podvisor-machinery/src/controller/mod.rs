//! One controller runtime, shaped like kube-runtime's `Controller`: informers on the kind a
//! controller reconciles (its root: ReplicaSets, Deployments, Jobs), on the kind it makes
//! (its owned kind, cached beside the roots) and optionally on a trigger kind (watched and
//! not cached: a change may let a root's sync succeed), a work queue of root keys with
//! bounded workers, and after each sync an error policy.
//!
//! A controller is a [`Reconciler`]: plain state (its expectations, counts) and functions
//! the runtime calls: what a change of each watched kind means ([`Effects`]: keys to sync,
//! work to spawn, Events to record on a root), `reconcile` (plan from the caches, and the
//! future that carries the plan out) and `reconciled` (the report's bookkeeping, and when
//! to sync again or the typed [`SyncError`]). The actor itself, [`Controller`], is the same
//! for every controller: it owns the reflectors, the caches ([`World`]), the workers, the
//! event recording and the summary.
//!
//! The error policy: a sync that failed is tried again after the work queue's rate limiter
//! (as kube-controller-manager's `AddRateLimited`). A [`SyncError::is_conflict`] (someone
//! wrote the object since the cache saw it) is retried the same way but is not a failure:
//! it is not counted in `failed_syncs` and not warned about, since the newer version is
//! already on its way through the watch. A root found gone is nothing to retry.
//!
//! Restart: nothing is kept. The caches are listed again and every root is queued.

mod runtime;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use podvisor_client::{Client, ListParams, Object};
use podvisor_core::{EventType, ObjectKey};
use serde::Serialize;

use crate::cache::{Cache, Delta};
use crate::reflector::Update;

pub use runtime::{Controller, ControllerSummary};

/// What a controller is: the runtime calls these; none of them runs in an actix System of
/// its own, so each is tested as a plain function.
pub trait Reconciler: Sized + Unpin + 'static {
    /// The actor's kind on the debug endpoint, e.g. `replicaset-controller`.
    const KIND: &'static str;
    /// The kind reconciled: the work queue holds its keys.
    type Root: Object;
    /// The kind it makes, cached beside the roots.
    type Owned: Object;
    /// A kind watched and not cached; with no [`Watches::trigger`], never watched.
    type Trigger: Object;
    /// What one sync did, handed back to [`Reconciler::reconciled`].
    type Report: 'static;
    /// The controller's own counts in its summary.
    type Counts: Serialize + PartialEq + std::fmt::Debug + Send + Sync + Unpin + 'static;

    /// What each informer lists and watches.
    fn watches(&self) -> Watches;
    /// The owned kind's cache, with the index and filter the controller needs.
    fn owned_cache(&self) -> Cache<Self::Owned> {
        Cache::new()
    }
    /// A root changed (its key is queued whatever this adds).
    fn on_root(&mut self, d: &Delta<Self::Root>, w: &World<Self>, fx: &mut Effects);
    /// An owned object changed.
    fn on_owned(&mut self, d: &Delta<Self::Owned>, w: &World<Self>, fx: &mut Effects);
    /// A trigger object changed.
    fn on_trigger(&mut self, _: &Update<Self::Trigger>, _: &World<Self>, _: &mut Effects) {}
    /// Both caches are filled for the first time in this instance, before any sync.
    fn on_synced(&mut self, _: &World<Self>, _: &mut Effects) {}
    /// Plans `root`'s sync; the future carries the plan out. `None`: nothing to do.
    fn reconcile(
        &mut self,
        key: &ObjectKey,
        root: Arc<Self::Root>,
        w: &World<Self>,
        fx: &mut Effects,
    ) -> Option<LocalBoxFuture<'static, Self::Report>>;
    /// Takes what the sync did: when to sync again (if a deadline asks it), or why it
    /// failed.
    fn reconciled(
        &mut self,
        key: &ObjectKey,
        report: Self::Report,
        w: &World<Self>,
        fx: &mut Effects,
    ) -> Result<Option<Duration>, SyncError>;
    fn counts(&self) -> Self::Counts;
}

/// What the informers list and watch.
#[derive(Debug, Clone, Default)]
pub struct Watches {
    pub roots: ListParams,
    pub owned: ListParams,
    /// `None`: the trigger kind is not watched.
    pub trigger: Option<ListParams>,
}

/// The runtime's caches and client, which handlers and syncs read.
pub struct World<R: Reconciler> {
    pub roots: Cache<R::Root>,
    /// Whether `roots` holds a first list (before it, a root's absence says nothing).
    pub roots_listed: bool,
    pub owned: Cache<R::Owned>,
    pub client: Client,
}

/// What a handler or a sync asks of the runtime.
#[derive(Default)]
pub struct Effects {
    pub(crate) keys: Vec<(ObjectKey, Duration)>,
    pub(crate) tasks: Vec<LocalBoxFuture<'static, ()>>,
    pub(crate) events: Vec<(ObjectKey, Event)>,
}

/// An Event on a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub type_: EventType,
    pub reason: &'static str,
    pub message: String,
}

impl Event {
    pub fn normal(reason: &'static str, message: String) -> Self {
        Self {
            type_: EventType::Normal,
            reason,
            message,
        }
    }

    pub fn warning(reason: &'static str, message: String) -> Self {
        Self {
            type_: EventType::Warning,
            reason,
            message,
        }
    }
}

impl Effects {
    /// Sync the root `key` now.
    pub fn sync(&mut self, key: ObjectKey) {
        self.keys.push((key, Duration::ZERO));
    }

    /// Sync the root `key` after `delay`.
    pub fn sync_after(&mut self, key: ObjectKey, delay: Duration) {
        self.keys.push((key, delay));
    }

    /// Run `work` in the controller's context (it ends with the instance).
    pub fn spawn(&mut self, work: impl Future<Output = ()> + 'static) {
        self.tasks.push(Box::pin(work));
    }

    /// Record `event` on the root `key` (the cached incarnation's UID is added).
    pub fn event(&mut self, key: &ObjectKey, event: Event) {
        self.events.push((key.clone(), event));
    }
}

/// Why a sync failed: which step, and the API's typed error.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct SyncError {
    pub step: &'static str,
    #[source]
    pub source: podvisor_client::Error,
}

impl SyncError {
    pub fn new(step: &'static str, source: podvisor_client::Error) -> Self {
        Self { step, source }
    }

    /// Someone wrote the object since the cache saw it: the newer version is coming.
    pub fn is_conflict(&self) -> bool {
        self.source.is_conflict()
    }

    /// The object the step wrote is gone: its deletion is coming.
    pub fn is_not_found(&self) -> bool {
        self.source.is_not_found()
    }
}
