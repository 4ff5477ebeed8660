//! The store: every object in memory for reads, every write committed to redb first.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use podvisor_client::{AnyObject, DeleteParams, Error, PostParams, Propagation, Subresource};
use podvisor_core::Kind;
use tracing::warn;

use crate::admission::{Admission, Objects};
use crate::db::{Batch, Db};
use crate::delete::{self, DeleteStep};
use crate::meta;
use crate::object::{Change, ChangeType, Resource, StoredObject};
use crate::selector::Selector;

mod dependents;
mod expiry;
mod namespaces;
mod read;
mod replica;
mod server_side;
mod update;
mod window;

pub use window::{WINDOW_FRESH, WINDOW_MIN};

/// The most bytes of objects the change window keeps (beyond that the oldest changes go,
/// and a watch from before them relists): a few large objects updated often must not pin
/// gigabytes.
pub const WINDOW_BYTES: usize = 64 << 20;

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The redb file.
    pub path: PathBuf,
    /// How many changes a watch can resume across (kube-apiserver's watch cache keeps a
    /// similar window; older revisions get 410 Gone).
    pub window: usize,
}

/// One write inside a transaction.
enum Write {
    Put(ChangeType, AnyObject),
    /// Gone, with its last state as watchers see it.
    Remove(AnyObject),
}

pub struct Store {
    db: Db,
    admission: Vec<Arc<dyn Admission>>,
    objects: BTreeMap<String, Arc<StoredObject>>,
    window: VecDeque<Change>,
    window_len: usize,
    /// The window's objects' bytes: it is bounded by these too, not only by its length.
    window_bytes: usize,
    /// When the window's changes were written (`window.rs`), and through which revision
    /// they are older than [`WINDOW_FRESH`].
    marks: VecDeque<(Instant, u64)>,
    stale_through: u64,
    revision: u64,
    /// Who the write under way is for (server-side apply's ownership), while it runs.
    writer: Option<String>,
}

pub(crate) fn key(kind: Kind, namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", kind.as_str())
}

fn stored(kind: Kind, json: Vec<u8>) -> Option<StoredObject> {
    StoredObject::from_json(kind, Bytes::from(json)).ok()
}

fn kind_of(json: &[u8]) -> Option<Kind> {
    #[derive(serde::Deserialize)]
    struct Head {
        kind: String,
    }
    let head: Head = serde_json::from_slice(json).ok()?;
    Kind::ALL.into_iter().find(|k| k.as_str() == head.kind)
}

impl Store {
    pub fn open(cfg: &StoreConfig) -> Result<Store, Error> {
        let (db, loaded) = Db::open(&cfg.path)?;
        let mut store = Store {
            db,
            admission: Vec::new(),
            objects: BTreeMap::new(),
            window: VecDeque::new(),
            window_len: cfg.window.max(1),
            window_bytes: 0,
            marks: VecDeque::new(),
            stale_through: 0,
            revision: loaded.revision,
            writer: None,
        };
        for json in loaded.objects {
            let bytes = json.len();
            let Some(o) = kind_of(&json).and_then(|k| stored(k, json)) else {
                warn!(bytes, "a stored object cannot be read; it is not served");
                continue;
            };
            let k = key(o.kind, &o.namespace, &o.name);
            store.objects.insert(k, Arc::new(o));
        }
        let mut last: HashMap<String, Arc<StoredObject>> = HashMap::new();
        for (revision, code, json) in loaded.log {
            let kind = ChangeType::from_code(code);
            let object = kind_of(&json).and_then(|k| stored(k, json));
            let (Some(kind), Some(o)) = (kind, object) else {
                warn!(
                    revision,
                    "a change in the store's log cannot be read; watches skip it"
                );
                continue;
            };
            let object = Arc::new(o);
            let k = key(object.kind, &object.namespace, &object.name);
            let prev = last.insert(k, object.clone());
            store.window_bytes += object.json.len();
            store.window.push_back(Change {
                revision,
                kind,
                object,
                prev,
            });
        }
        // What a restart loads counts as written now: a watch has the fresh period to resume.
        store.mark(store.revision);
        store.ensure_namespaces()?;
        Ok(store)
    }

    /// Checks every create from now on must pass.
    pub fn set_admission(&mut self, checks: Vec<Arc<dyn Admission>>) {
        self.admission = checks;
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The revision before the oldest change still in the window: a watch from it or later
    /// misses nothing.
    pub fn oldest_resumable(&self) -> u64 {
        self.window
            .front()
            .map_or(self.revision, |c| c.revision - 1)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn get(&self, kind: Kind, ns: &str, name: &str) -> Result<Arc<StoredObject>, Error> {
        self.objects
            .get(&key(kind, ns, name))
            .cloned()
            .ok_or_else(|| Error::not_found(&Resource::of(kind).qualified(), name))
    }

    pub fn create(
        &mut self,
        res: &Resource,
        mut object: AnyObject,
        ns: Option<&str>,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error> {
        meta::check_namespace(res, &mut object, ns)?;
        for check in &self.admission {
            check.admit(self, res, &mut object, None, Subresource::Main)?;
        }
        meta::prepare_create(res, &mut object, ns)?;
        let (ns, name) = (object.namespace().to_string(), object.name().to_string());
        if res.namespaced() && self.get(Kind::Namespace, "", &ns).is_err() {
            return Err(Error::not_found("namespaces", &ns));
        }
        self.check_not_terminating(res, &ns, &name)?;
        self.check_owners(&object)?;
        if self.objects.contains_key(&key(res.kind, &ns, &name)) {
            return Err(Error::AlreadyExists {
                resource: res.qualified(),
                name,
            });
        }
        self.commit(vec![Write::Put(ChangeType::Added, object)], opts)
    }

    pub fn delete(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        opts: &DeleteParams,
    ) -> Result<(Option<Arc<StoredObject>>, Vec<Change>), Error> {
        let ns = if res.namespaced() { ns } else { "" };
        if res.kind == Kind::Namespace && namespaces::SYSTEM_NAMESPACES.contains(&name) {
            return Err(Error::Forbidden {
                resource: "namespaces".into(),
                name: name.to_string(),
                cause: "Forbidden".into(),
                message: "this namespace may not be deleted".into(),
            });
        }
        let old = self.get(res.kind, ns, name)?;
        let mut writes = match delete::plan(res, &old, opts)? {
            _ if res.kind == Kind::Namespace => self.delete_namespace(&old)?,
            DeleteStep::Unchanged => return Ok((Some(old), Vec::new())),
            DeleteStep::Mark(v) => vec![Write::Put(ChangeType::Modified, v)],
            DeleteStep::Remove(v) => vec![Write::Remove(v)],
        };
        let removing = matches!(writes[0], Write::Remove(..));
        match opts.propagation {
            Propagation::Orphan => writes.extend(self.orphan_dependents(&old)),
            Propagation::Foreground if self.has_dependents(&old) => {
                if let Some(mark) = Self::foreground_mark(&old) {
                    writes[0] = mark;
                }
                writes.extend(self.delete_dependents(&old));
            }
            _ if removing => writes.extend(self.delete_dependents(&old)),
            _ => {}
        }
        writes.extend(self.release_owners(&writes));
        let dry_run = PostParams {
            dry_run: opts.dry_run,
        };
        let changes = self.commit(writes, dry_run)?;
        // The owner as this write leaves it: kept (marked) or gone, even when a foreground
        // mark and the removal it made possible came in the same write.
        let kept = changes
            .iter()
            .rev()
            .find(|c| c.object.uid == old.uid)
            .filter(|c| c.kind != ChangeType::Deleted)
            .map(|c| c.object.clone());
        Ok((kept, changes))
    }

    /// Gives each write the next revision, commits them in one transaction, and only then
    /// changes what readers see.
    fn commit(&mut self, mut writes: Vec<Write>, opts: PostParams) -> Result<Vec<Change>, Error> {
        let emptied = self.finish_namespaces(&writes);
        writes.extend(emptied);
        let mut batch = Batch::default();
        let mut changes = Vec::with_capacity(writes.len());
        let mut revision = self.revision;
        for w in writes {
            revision += 1;
            let (kind, object) = match w {
                Write::Put(t, o) => (t, o),
                Write::Remove(o) => (ChangeType::Deleted, o),
            };
            let k = key(object.kind(), object.namespace(), object.name());
            let prev = self.objects.get(&k).cloned();
            // A dry run answers with the version the object has (none for a create), as
            // kube-apiserver does: nothing was stored (`kubectl diff` shows no new one).
            let stamp = match (opts.dry_run, &prev) {
                (false, _) => Some(revision),
                (true, prev) => prev.as_ref().map(|p| p.revision),
            };
            let (object, json) = meta::seal(object, stamp)?;
            let o = StoredObject::new(object, json.clone());
            match kind {
                ChangeType::Deleted => batch.deletes.push(k),
                _ => batch.puts.push((k, json.clone())),
            }
            batch.log.push((revision, kind.code(), json.clone()));
            changes.push(Change {
                revision,
                kind,
                object: Arc::new(o),
                prev,
            });
        }
        if opts.dry_run {
            return Ok(shared(changes));
        }
        let drop = self.to_drop(&changes);
        batch.keep_from = self
            .window
            .iter()
            .chain(&changes)
            .nth(drop)
            .map_or(revision + 1, |c| c.revision);
        batch.revision = revision;
        self.db.commit(&batch)?;
        self.revision = revision;
        self.publish(&changes, drop);
        Ok(shared(changes))
    }
}

/// What a write answers and its watchers receive: copies of what it stored that decode
/// once for all of them (the stored objects and the change window stay JSON only).
fn shared(changes: Vec<Change>) -> Vec<Change> {
    changes
        .into_iter()
        .map(|c| Change {
            object: Arc::new(c.object.shared()),
            ..c
        })
        .collect()
}

impl Objects for Store {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        self.objects.get(&key(kind, namespace, name)).cloned()
    }

    fn select(&self, sel: &Selector) -> Vec<Arc<StoredObject>> {
        self.list(sel, None, None)
            .map(|page| page.items)
            .unwrap_or_default()
    }
}
