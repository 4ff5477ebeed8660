//! The store actor: owns the [`Store`], answers reads and writes, and fans every committed
//! change out to its watchers.
//!
//! It runs on an arbiter (thread) of its own: a write waits for redb's fsync, and no other
//! actor should wait behind it. Writes are serialised here, which is what gives the
//! revision its order. Watchers get bounded channels: one that falls `capacity` changes
//! behind is dropped (its stream ends, and the client re-watches from the last revision it
//! saw), so a slow client costs a bounded amount of memory.
//!
//! Restart: the store reopens from disk; watchers' channels close and their clients
//! resume from their revisions, which the durable change window still holds.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_client::{AnyObject, DeleteParams, Deleted, Error, Patch, PostParams, Subresource};
use podvisor_core::Kind;
use serde::Serialize;
use tokio::sync::mpsc;
use tracing::{debug, error, info};

use crate::admission::Admission;
use crate::object::{Change, Resource, StoredObject};
use crate::page::ListPage;
use crate::selector::Selector;
use crate::store::{Store, StoreConfig};

/// Creates an object (in `namespace`, the request's, for namespaced kinds); answers it as
/// stored.
#[derive(Message)]
#[rtype(result = "Result<Arc<StoredObject>, Error>")]
pub struct Create {
    pub namespace: Option<String>,
    pub object: AnyObject,
    pub opts: PostParams,
}

/// Replaces an object, or only its status.
#[derive(Message)]
#[rtype(result = "Result<Arc<StoredObject>, Error>")]
pub struct Replace {
    pub object: AnyObject,
    pub sub: Subresource,
    pub opts: PostParams,
    /// Who writes, for server-side apply's ownership (`fieldManager`, else the client's
    /// name); `None` for the agent's own writers.
    pub manager: Option<String>,
}

/// Patches an object, or only its status; with `strict`, a patch that introduces fields
/// the kind does not know is refused. Worked out off the store's thread (`patching.rs`).
#[derive(Message)]
#[rtype(result = "Result<Arc<StoredObject>, Error>")]
pub struct PatchObject {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub patch: Patch,
    pub sub: Subresource,
    pub strict: bool,
    pub opts: PostParams,
    /// As [`Replace::manager`].
    pub manager: Option<String>,
}

/// Deletes an object: `Marked` is the object still there, marked for deletion.
#[derive(Message)]
#[rtype(result = "Result<Deleted<Arc<StoredObject>>, Error>")]
pub struct Delete {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub opts: DeleteParams,
}

#[derive(Message)]
#[rtype(result = "Result<Arc<StoredObject>, Error>")]
pub struct Get {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

#[derive(Message)]
#[rtype(result = "Result<ListPage, Error>")]
pub struct List {
    pub selector: Selector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
}

/// What a watcher receives.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    Change(Change),
    /// Everything up to this revision has been sent.
    Bookmark(u64),
}

/// Starts a watch. `from: None` starts with an ADDED event for each matching object (as a
/// watch without a resourceVersion does), then changes; `Some(r)` sends every change after
/// `r` first. Fails with `Gone` when `r` is older than the change window.
#[derive(Message)]
#[rtype(result = "Result<mpsc::Receiver<WatchEvent>, Error>")]
pub struct Watch {
    pub selector: Selector,
    pub from: Option<u64>,
}

struct Watcher {
    selector: Selector,
    tx: mpsc::Sender<WatchEvent>,
}

pub struct StoreActor {
    config: StoreConfig,
    store: Option<Store>,
    watchers: Vec<Watcher>,
    /// Changes a watcher may fall behind before it is cut off.
    capacity: usize,
    cut_off: u64,
    /// Events older than this are deleted (kube-apiserver's `--event-ttl`).
    event_ttl: Duration,
    admission: Vec<Arc<dyn Admission>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreSummary {
    pub open: bool,
    pub objects: usize,
    pub revision: u64,
    pub watchers: usize,
    /// Watchers dropped for falling behind, since this instance started.
    pub cut_off: u64,
}

const BOOKMARK_PERIOD: Duration = Duration::from_secs(10);
/// kube-apiserver's default event TTL.
pub const EVENT_TTL: Duration = Duration::from_secs(3600);
const EXPIRY_PERIOD: Duration = Duration::from_secs(60);
const EXPIRY_BATCH: usize = 1000;

impl StoreActor {
    pub fn new(config: StoreConfig, watcher_capacity: usize) -> Self {
        Self {
            config,
            store: None,
            watchers: Vec::new(),
            capacity: watcher_capacity.max(16),
            cut_off: 0,
            event_ttl: EVENT_TTL,
            admission: Vec::new(),
        }
    }

    /// Checks every create must pass (run inside the write, see [`Admission`]).
    pub fn with_admission(mut self, checks: Vec<Arc<dyn Admission>>) -> Self {
        self.admission = checks;
        self
    }

    pub fn with_event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Deletes expired Events, a bounded batch per sweep.
    fn expire_events(&mut self) {
        let ttl = u64::try_from(self.event_ttl.as_millis()).unwrap_or(u64::MAX);
        let cutoff = podvisor_core::time::now_unix_ms().saturating_sub(ttl);
        match self.write(false, |s| s.expire_events(cutoff, EXPIRY_BATCH)) {
            Ok(gone) if !gone.is_empty() => info!(events = gone.len(), "expired events deleted"),
            Ok(_) => {}
            Err(e) => error!(error = %e, "cannot delete expired events"),
        }
    }

    /// Lets the window's stale changes go (`Store::expire_window`).
    fn expire_window(&mut self) {
        if let Some(store) = self.store.as_mut() {
            let gone = store.expire_window(std::time::Instant::now());
            if gone > 0 {
                debug!(changes = gone, "stale changes left the watch window");
            }
        }
    }

    pub(crate) fn store(&mut self) -> Result<&mut Store, Error> {
        self.store
            .as_mut()
            .ok_or_else(|| Error::Unavailable("the store is not open".into()))
    }

    /// Sends each watcher the changes it selects; drops those that are gone or too slow.
    fn fan_out(&mut self, changes: &[Change]) {
        let before = self.watchers.len();
        self.watchers.retain(|w| {
            changes
                .iter()
                .filter_map(|c| w.selector.view(c))
                .all(|c| w.tx.try_send(WatchEvent::Change(c)).is_ok())
        });
        let dropped = before - self.watchers.len();
        if dropped > 0 {
            self.cut_off += dropped as u64;
            info!(dropped, "watchers cut off (gone, or too far behind)");
        }
    }

    fn bookmark(&mut self) {
        let Some(rev) = self.store.as_ref().map(Store::revision) else {
            return;
        };
        // A full channel skips a bookmark; only changes are never skipped.
        self.watchers.retain(|w| {
            !matches!(
                w.tx.try_send(WatchEvent::Bookmark(rev)),
                Err(mpsc::error::TrySendError::Closed(_))
            )
        });
    }

    /// Runs a write and tells the watchers, unless it was a dry run (answered, never
    /// stored: nobody may act on it).
    pub(crate) fn write(
        &mut self,
        dry_run: bool,
        f: impl FnOnce(&mut Store) -> Result<Vec<Change>, Error>,
    ) -> Result<Vec<Change>, Error> {
        let changes = f(self.store()?)?;
        if !dry_run {
            self.fan_out(&changes);
        }
        Ok(changes)
    }

    fn start_watch(&mut self, msg: Watch) -> Result<mpsc::Receiver<WatchEvent>, Error> {
        let store = self.store()?;
        let first: Vec<WatchEvent> = match msg.from {
            Some(r) => store
                .changes_since(r, &msg.selector)?
                .into_iter()
                .map(WatchEvent::Change)
                .collect(),
            None => {
                let page = store.list(&msg.selector, None, None)?;
                page.items
                    .into_iter()
                    .map(|o| {
                        WatchEvent::Change(Change {
                            revision: o.revision,
                            kind: crate::object::ChangeType::Added,
                            object: o,
                            prev: None,
                        })
                    })
                    .collect()
            }
        };
        // The first batch may be larger than a live watcher's allowance, never unbounded:
        // it is what the store holds already.
        let (tx, rx) = mpsc::channel(self.capacity.max(first.len() + 1));
        for e in first {
            let _ = tx.try_send(e);
        }
        self.watchers.push(Watcher {
            selector: msg.selector,
            tx,
        });
        Ok(rx)
    }
}

pub(crate) fn one(changes: Vec<Change>) -> Result<Arc<StoredObject>, Error> {
    changes
        .into_iter()
        .next()
        .map(|c| c.object)
        .ok_or_else(|| Error::Internal("the write produced no change".into()))
}

impl Actor for StoreActor {
    type Context = Context<Self>;
}

impl SupervisedActor for StoreActor {
    const KIND: &'static str = "store";
    type Summary = StoreSummary;

    /// The disk is the truth: reopen it. A failure leaves the store closed (every request
    /// answers an error) and is retried every second.
    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        self.watchers.clear();
        self.try_open();
        ctx.run_interval(Duration::from_secs(1), |act, _| {
            if act.store.is_none() {
                act.try_open();
            }
        });
        ctx.run_interval(BOOKMARK_PERIOD, |act, _| {
            act.bookmark();
            act.expire_window();
        });
        ctx.run_interval(EXPIRY_PERIOD.min(self.event_ttl), |act, _| {
            act.expire_events()
        });
    }

    fn summary(&self) -> StoreSummary {
        StoreSummary {
            open: self.store.is_some(),
            objects: self.store.as_ref().map_or(0, Store::len),
            revision: self.store.as_ref().map_or(0, Store::revision),
            watchers: self.watchers.len(),
            cut_off: self.cut_off,
        }
    }
}

impl StoreActor {
    fn try_open(&mut self) {
        self.store = None;
        match Store::open(&self.config) {
            Ok(mut s) => {
                info!(path = %self.config.path.display(), objects = s.len(), revision = s.revision(), "store open");
                s.set_admission(self.admission.clone());
                self.store = Some(s);
            }
            Err(e) => {
                error!(path = %self.config.path.display(), error = %e, "cannot open the store")
            }
        }
    }
}

impl Handler<Create> for StoreActor {
    type Result = Result<Arc<StoredObject>, Error>;
    fn handle(&mut self, m: Create, _: &mut Context<Self>) -> Self::Result {
        let res = Resource::of(m.object.kind());
        let ns = m.namespace.as_deref();
        one(self.write(m.opts.dry_run, |s| s.create(&res, m.object, ns, m.opts))?)
    }
}

impl Handler<Replace> for StoreActor {
    type Result = Result<Arc<StoredObject>, Error>;
    fn handle(&mut self, m: Replace, _: &mut Context<Self>) -> Self::Result {
        let res = Resource::of(m.object.kind());
        one(self.write(m.opts.dry_run, |s| {
            s.as_writer(m.manager, |s| s.update(&res, m.object, m.sub, m.opts))
        })?)
    }
}

impl Handler<Delete> for StoreActor {
    type Result = Result<Deleted<Arc<StoredObject>>, Error>;
    fn handle(&mut self, m: Delete, _: &mut Context<Self>) -> Self::Result {
        let res = Resource::of(m.kind);
        let (kept, changes) = self.store()?.delete(&res, &m.namespace, &m.name, &m.opts)?;
        if !m.opts.dry_run {
            self.fan_out(&changes);
        }
        match kept {
            Some(o) => Ok(Deleted::Marked(o)),
            None => one(changes).map(Deleted::Gone),
        }
    }
}

impl Handler<Get> for StoreActor {
    type Result = Result<Arc<StoredObject>, Error>;
    fn handle(&mut self, m: Get, _: &mut Context<Self>) -> Self::Result {
        self.store()?.get(m.kind, &m.namespace, &m.name)
    }
}

impl Handler<List> for StoreActor {
    type Result = Result<ListPage, Error>;
    fn handle(&mut self, m: List, _: &mut Context<Self>) -> Self::Result {
        self.store()?
            .list(&m.selector, m.limit, m.continue_token.as_deref())
    }
}

impl Handler<Watch> for StoreActor {
    type Result = Result<mpsc::Receiver<WatchEvent>, Error>;
    fn handle(&mut self, m: Watch, _: &mut Context<Self>) -> Self::Result {
        self.start_watch(m)
    }
}
