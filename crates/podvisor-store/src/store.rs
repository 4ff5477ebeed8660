//! The store: every object in memory for reads, every write committed to redb first.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use podvisor_core::Kind;
use serde_json::{Value, json};

use tracing::warn;

use crate::admission::Admission;
use crate::db::{Batch, Db};
use crate::delete::{self, DeleteOptions, DeleteStep, Propagation};
use crate::error::StoreError;
use crate::meta;
use crate::object::{Change, ChangeType, Resource, StoredObject};

mod dependents;
mod expiry;
mod read;
mod window;

/// Namespaces that always exist (made at open, never deleted), as in a cluster.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

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

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Checked and answered, never stored.
    pub dry_run: bool,
}

/// One write inside a transaction.
enum Write {
    Put(ChangeType, Value),
    /// Gone, with its last state as watchers see it.
    Remove(Kind, Value),
}

pub struct Store {
    db: Db,
    admission: Vec<Arc<dyn Admission>>,
    objects: BTreeMap<String, Arc<StoredObject>>,
    window: VecDeque<Change>,
    window_len: usize,
    /// The window's objects' bytes: it is bounded by these too, not only by its length.
    window_bytes: usize,
    revision: u64,
}

pub(crate) fn key(kind: Kind, namespace: &str, name: &str) -> String {
    format!("{}/{namespace}/{name}", kind.as_str())
}

fn stored(kind: Kind, json: Vec<u8>) -> Option<StoredObject> {
    let value: Value = serde_json::from_slice(&json).ok()?;
    Some(StoredObject::new(kind, &value, Bytes::from(json)))
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
    pub fn open(cfg: &StoreConfig) -> Result<Store, StoreError> {
        let (db, loaded) = Db::open(&cfg.path)?;
        let mut store = Store {
            db,
            admission: Vec::new(),
            objects: BTreeMap::new(),
            window: VecDeque::new(),
            window_len: cfg.window.max(1),
            window_bytes: 0,
            revision: loaded.revision,
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
        store.ensure_namespaces()?;
        Ok(store)
    }

    fn ensure_namespaces(&mut self) -> Result<(), StoreError> {
        let res = Resource::of(Kind::Namespace);
        for ns in SYSTEM_NAMESPACES {
            if self.get(Kind::Namespace, "", ns).is_err() {
                let body = json!({"metadata": {"name": ns}});
                self.create(&res, body, None, WriteOptions::default())?;
            }
        }
        Ok(())
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

    pub fn get(&self, kind: Kind, ns: &str, name: &str) -> Result<Arc<StoredObject>, StoreError> {
        self.objects
            .get(&key(kind, ns, name))
            .cloned()
            .ok_or_else(|| StoreError::NotFound {
                resource: Resource::of(kind).qualified(),
                name: name.to_string(),
            })
    }

    pub fn create(
        &mut self,
        res: &Resource,
        mut body: Value,
        ns: Option<&str>,
        opts: WriteOptions,
    ) -> Result<Vec<Change>, StoreError> {
        meta::check_namespace(res, &mut body, ns)?;
        for check in &self.admission {
            check.admit(self, res, &mut body, None)?;
        }
        meta::prepare_create(res, &mut body, ns)?;
        let (ns, name) = names(&body);
        if res.namespaced() && self.get(Kind::Namespace, "", &ns).is_err() {
            return Err(StoreError::NotFound {
                resource: "namespaces",
                name: ns,
            });
        }
        if self.objects.contains_key(&key(res.kind, &ns, &name)) {
            return Err(StoreError::AlreadyExists {
                resource: res.qualified(),
                name,
            });
        }
        self.commit(vec![Write::Put(ChangeType::Added, body)], opts)
    }

    /// Replaces an object (or only its status). A `resourceVersion` in the body must be the
    /// stored one.
    pub fn update(
        &mut self,
        res: &Resource,
        body: Value,
        status_only: bool,
        opts: WriteOptions,
    ) -> Result<Vec<Change>, StoreError> {
        let (ns, name) = names(&body);
        let ns = if res.namespaced() { ns } else { String::new() };
        let old = self.get(res.kind, &ns, &name)?;
        let asked = body["metadata"]["resourceVersion"].as_str().unwrap_or("");
        if !asked.is_empty() && asked != old.revision.to_string() {
            return Err(StoreError::Conflict {
                resource: res.qualified(),
                name,
                reason: "the object has been modified; please apply your changes to the latest version and try again".into(),
            });
        }
        let mut body = body;
        if !status_only {
            for check in &self.admission {
                check.admit(self, res, &mut body, Some(&old))?;
            }
        }
        let mut new = meta::prepare_update(res, &old.value(), body, status_only)?;
        if status_only {
            // A status is admitted as part of the whole object: one that does not parse as
            // its kind (a `startTime` that is no time) would make the object unreadable.
            for check in &self.admission {
                check.admit(self, res, &mut new, Some(&old))?;
            }
        }
        let mut writes = if delete::removable_after_update(res, &new) {
            let mut w = self.delete_dependents(&old);
            w.insert(0, Write::Remove(res.kind, new));
            w
        } else {
            vec![Write::Put(ChangeType::Modified, new)]
        };
        writes.extend(self.release_owners(&writes));
        self.commit(writes, opts)
    }

    pub fn delete(
        &mut self,
        res: &Resource,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Option<Arc<StoredObject>>, Vec<Change>), StoreError> {
        let ns = if res.namespaced() { ns } else { "" };
        if res.kind == Kind::Namespace && SYSTEM_NAMESPACES.contains(&name) {
            return Err(StoreError::Forbidden {
                resource: "namespaces",
                name: name.to_string(),
                cause: "Forbidden",
                message: "this namespace may not be deleted".into(),
            });
        }
        let old = self.get(res.kind, ns, name)?;
        let mut writes = match delete::plan(res, &old, opts)? {
            DeleteStep::Unchanged => return Ok((Some(old), Vec::new())),
            DeleteStep::Mark(v) => vec![Write::Put(ChangeType::Modified, v)],
            DeleteStep::Remove(v) => vec![Write::Remove(res.kind, v)],
        };
        let removing = matches!(writes[0], Write::Remove(..));
        match opts.propagation {
            Propagation::Orphan => writes.extend(self.orphan_dependents(&old)),
            Propagation::Foreground if self.has_dependents(&old) => {
                writes[0] = Self::foreground_mark(&old);
                writes.extend(self.delete_dependents(&old));
            }
            _ if removing => writes.extend(self.delete_dependents(&old)),
            _ => {}
        }
        writes.extend(self.release_owners(&writes));
        let changes = self.commit(
            writes,
            WriteOptions {
                dry_run: opts.dry_run,
            },
        )?;
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
    fn commit(
        &mut self,
        writes: Vec<Write>,
        opts: WriteOptions,
    ) -> Result<Vec<Change>, StoreError> {
        let mut batch = Batch::default();
        let mut changes = Vec::with_capacity(writes.len());
        let mut revision = self.revision;
        for w in writes {
            revision += 1;
            let (kind, mut value, obj_kind) = match w {
                Write::Put(t, v) => {
                    let kind = kind_str(&v);
                    (t, v, kind)
                }
                Write::Remove(k, v) => (ChangeType::Deleted, v, Some(k)),
            };
            let obj_kind = obj_kind.ok_or_else(|| {
                StoreError::BadRequest("the object names no kind podvisor serves".into())
            })?;
            let json = meta::seal(&mut value, revision)?;
            let o = StoredObject::new(obj_kind, &value, Bytes::from(json.clone()));
            let k = key(o.kind, &o.namespace, &o.name);
            let prev = self.objects.get(&k).cloned();
            match kind {
                ChangeType::Deleted => batch.deletes.push(k),
                _ => batch.puts.push((k, json.clone())),
            }
            batch.log.push((revision, kind.code(), json));
            changes.push(Change {
                revision,
                kind,
                object: Arc::new(o),
                prev,
            });
        }
        if opts.dry_run {
            return Ok(changes);
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
        Ok(changes)
    }
}

fn kind_str(v: &Value) -> Option<Kind> {
    let k = v["kind"].as_str()?;
    Kind::ALL.into_iter().find(|x| x.as_str() == k)
}

fn names(v: &Value) -> (String, String) {
    let s = |f: &str| v["metadata"][f].as_str().unwrap_or_default().to_string();
    (s("namespace"), s("name"))
}
