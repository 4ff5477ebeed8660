//! Garbage collection of dependents, in the same transaction as the write that calls for
//! it (kube-apiserver's garbage collector does the same work soon after):
//!
//! - an owner removed (or removed with `propagationPolicy: Background`): the objects that
//!   name it in `ownerReferences` are deleted (pods gracefully), unless another of their
//!   owners still exists: then they only lose the reference to the one that went;
//! - `Orphan`: they lose the reference instead;
//! - `Foreground`: the owner stays, marked for deletion and held by the
//!   `foregroundDeletion` finalizer, while its dependents are deleted; once no dependent
//!   that blocks it (`blockOwnerDeletion`) is left, in any write (removed, or its reference
//!   taken away or made non-blocking), the finalizer goes, and so does the owner if nothing
//!   else holds it.

use std::collections::HashMap;
use std::sync::Arc;

use podvisor_core::Kind;
use serde_json::{Value, json};

use super::{Store, Write, key};
use crate::delete::{self, DeleteOptions, DeleteStep};
use crate::object::{ChangeType, OwnerRef, Resource, StoredObject};

pub(crate) const FOREGROUND: &str = "foregroundDeletion";

fn kind_named(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.as_str() == name)
}

/// The store as a batch of writes leaves it: written objects in their new state (`None`
/// when removed), the others as stored.
struct Overlay<'a> {
    store: &'a Store,
    written: HashMap<String, Option<Arc<StoredObject>>>,
}

fn object_of(v: &Value) -> Option<StoredObject> {
    let kind = kind_named(v["kind"].as_str()?)?;
    Some(StoredObject::from_value(kind, v))
}

impl<'a> Overlay<'a> {
    fn new(store: &'a Store) -> Self {
        Self {
            store,
            written: HashMap::new(),
        }
    }

    fn apply(&mut self, w: &Write) -> Option<Arc<StoredObject>> {
        let (v, removed) = match w {
            Write::Put(_, v) => (v, false),
            Write::Remove(_, v) => (v, true),
        };
        let o = Arc::new(object_of(v)?);
        let k = key(o.kind, &o.namespace, &o.name);
        let before = self.get(&k);
        self.written.insert(k, (!removed).then(|| o.clone()));
        before
    }

    fn get(&self, k: &str) -> Option<Arc<StoredObject>> {
        match self.written.get(k) {
            Some(o) => o.clone(),
            None => self.store.objects.get(k).cloned(),
        }
    }

    /// Whether anything still blocks `owner` (as the batch leaves it).
    fn blocked(&self, owner: &StoredObject) -> bool {
        let blocks = |o: &StoredObject| {
            o.owners
                .iter()
                .any(|r| *r.uid == *owner.uid && r.block_owner_deletion)
        };
        let stored = self
            .store
            .objects
            .iter()
            .filter(|(k, _)| !self.written.contains_key(*k));
        stored
            .map(|(_, o)| o)
            .chain(self.written.values().flatten())
            .any(|o| blocks(o))
    }

    /// The owner `r` names, from an object in `ns`, if it exists (same UID).
    fn owner(&self, r: &OwnerRef, ns: &str) -> Option<Arc<StoredObject>> {
        let kind = kind_named(&r.kind)?;
        let ns = if kind.namespaced() { ns } else { "" };
        self.get(&key(kind, ns, &r.name)).filter(|o| o.uid == r.uid)
    }
}

impl Store {
    fn dependents_of<'a>(
        &'a self,
        uid: &'a str,
    ) -> impl Iterator<Item = &'a Arc<StoredObject>> + 'a {
        self.objects.values().filter(move |o| o.owned_by(uid))
    }

    pub(super) fn has_dependents(&self, owner: &StoredObject) -> bool {
        self.dependents_of(&owner.uid).next().is_some()
    }

    /// Deletes (gracefully, for pods) every object `owner` owns, but for those another
    /// existing owner still holds, which only lose the reference.
    pub(super) fn delete_dependents(&self, owner: &StoredObject) -> Vec<Write> {
        let overlay = Overlay::new(self);
        self.dependents_of(&owner.uid)
            .filter_map(|o| {
                let others = o.owners.iter().filter(|r| r.uid != owner.uid);
                if others
                    .clone()
                    .any(|r| overlay.owner(r, &o.namespace).is_some())
                {
                    let v = delete::orphaned(&o.value(), &owner.uid)?;
                    return Some(Write::Put(ChangeType::Modified, v));
                }
                match delete::plan(&Resource::of(o.kind), o, &DeleteOptions::default()) {
                    Ok(DeleteStep::Mark(v)) => Some(Write::Put(ChangeType::Modified, v)),
                    Ok(DeleteStep::Remove(v)) => Some(Write::Remove(o.kind, v)),
                    _ => None,
                }
            })
            .collect()
    }

    /// Takes `owner` out of its dependents' `ownerReferences`.
    pub(super) fn orphan_dependents(&self, owner: &StoredObject) -> Vec<Write> {
        self.dependents_of(&owner.uid)
            .filter_map(|o| delete::orphaned(&o.value(), &owner.uid))
            .map(|v| Write::Put(ChangeType::Modified, v))
            .collect()
    }

    /// Whether `writes` can concern an owner in foreground deletion at all: the cheap test
    /// that keeps every other write (a pod's status, say) from paying for the full one.
    fn may_release(&self, writes: &[Write]) -> bool {
        writes.iter().any(|w| {
            let (Write::Put(_, v) | Write::Remove(_, v)) = w;
            let held = |o: &StoredObject| o.finalizers.iter().any(|f| f == FOREGROUND);
            let ns = v["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = v["metadata"]["name"].as_str().unwrap_or_default();
            let kind = v["kind"].as_str().and_then(kind_named);
            let before = kind.and_then(|k| self.objects.get(&key(k, ns, name)));
            let marks = v["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == FOREGROUND));
            let refs = v["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten();
            let named = refs.filter_map(|r| {
                let k = kind_named(r["kind"].as_str()?)?;
                let ns = if k.namespaced() { ns } else { "" };
                self.objects.get(&key(k, ns, r["name"].as_str()?))
            });
            let old_owners = before
                .into_iter()
                .flat_map(|b| b.owners.iter())
                .filter_map(|r| {
                    let k = kind_named(&r.kind)?;
                    let ns = if k.namespaced() { ns } else { "" };
                    self.objects.get(&key(k, ns, &r.name))
                });
            marks || named.chain(old_owners).any(|o| held(o))
        })
    }

    /// `owner` marked for foreground deletion: held by the finalizer until its dependents
    /// are gone.
    pub(super) fn foreground_mark(owner: &StoredObject) -> Write {
        let mut v = owner.value();
        let meta = &mut v["metadata"];
        if !meta["deletionTimestamp"].is_string() {
            meta["deletionTimestamp"] = crate::meta::now();
        }
        meta["deletionGracePeriodSeconds"] = 0.into();
        let mut finalizers = owner.finalizers.clone();
        if !finalizers.iter().any(|f| f == FOREGROUND) {
            finalizers.push(FOREGROUND.into());
        }
        meta["finalizers"] = json!(finalizers);
        Write::Put(ChangeType::Modified, v)
    }

    /// The owners in foreground deletion that `writes` leave with nothing blocking them:
    /// their finalizer goes (and they go, if nothing else holds them), in the same batch.
    /// Repeats for the owners of what that removes in turn.
    pub(super) fn release_owners(&self, writes: &[Write]) -> Vec<Write> {
        if !self.may_release(writes) {
            return Vec::new();
        }
        let mut overlay = Overlay::new(self);
        let mut candidates: Vec<(OwnerRef, String)> = Vec::new();
        let note = |o: &StoredObject, out: &mut Vec<(OwnerRef, String)>| {
            out.extend(o.owners.iter().map(|r| (r.clone(), o.namespace.clone())));
        };
        for w in writes {
            if let Some(before) = overlay.apply(w) {
                note(&before, &mut candidates);
            }
            if let Write::Put(_, v) | Write::Remove(_, v) = w
                && let Some(o) = object_of(v)
            {
                note(&o, &mut candidates);
            }
        }
        let mut out = Vec::new();
        while let Some((r, ns)) = candidates.pop() {
            let Some(owner) = overlay.owner(&r, &ns) else {
                continue;
            };
            if !owner.finalizers.iter().any(|f| f == FOREGROUND) || overlay.blocked(&owner) {
                continue;
            }
            let mut released = owner.value();
            let kept: Vec<&String> = owner
                .finalizers
                .iter()
                .filter(|f| *f != FOREGROUND)
                .collect();
            released["metadata"]["finalizers"] = json!(kept);
            let w = if kept.is_empty() && owner.deleting {
                note(&owner, &mut candidates);
                Write::Remove(owner.kind, released)
            } else {
                Write::Put(ChangeType::Modified, released)
            };
            overlay.apply(&w);
            out.push(w);
        }
        out
    }
}
