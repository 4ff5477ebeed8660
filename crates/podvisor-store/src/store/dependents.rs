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

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use podvisor_client::{AnyObject, DeleteParams, Error};
use podvisor_core::Kind;
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};

use super::{Store, Write, key};
use crate::delete::{self, DeleteStep};
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

/// What the overlay needs of a written object: its identity, owners and finalizers.
fn object_of(o: &AnyObject) -> StoredObject {
    StoredObject::with_typed(o.clone(), Bytes::new())
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
            Write::Remove(v) => (v, true),
        };
        let o = Arc::new(object_of(v));
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
    /// existing owner still holds, which only lose the reference; and, for each dependent
    /// removed at once, its own dependents in turn (a Deployment's ReplicaSets' pods).
    pub(super) fn delete_dependents(&self, owner: &StoredObject) -> Vec<Write> {
        let overlay = Overlay::new(self);
        let mut out = Vec::new();
        let mut owners = vec![owner.uid.to_string()];
        let mut seen = std::collections::HashSet::new();
        while let Some(uid) = owners.pop() {
            for o in self.dependents_of(&uid) {
                if !seen.insert(o.uid.to_string()) {
                    continue;
                }
                let Some(w) = Self::delete_dependent(&overlay, o, &uid) else {
                    continue;
                };
                if matches!(w, Write::Remove(_)) {
                    owners.push(o.uid.to_string());
                }
                out.push(w);
            }
        }
        out
    }

    /// What deleting `owner_uid` does to `o`, one of its dependents.
    fn delete_dependent(overlay: &Overlay<'_>, o: &StoredObject, owner_uid: &str) -> Option<Write> {
        let others = o.owners.iter().filter(|r| *r.uid != *owner_uid);
        if others
            .clone()
            .any(|r| overlay.owner(r, &o.namespace).is_some())
        {
            let v = delete::orphaned(&o.object().ok()?, owner_uid)?;
            return Some(Write::Put(ChangeType::Modified, v));
        }
        match delete::plan(&Resource::of(o.kind), o, &DeleteParams::default()) {
            Ok(DeleteStep::Mark(v)) => Some(Write::Put(ChangeType::Modified, v)),
            Ok(DeleteStep::Remove(v)) => Some(Write::Remove(v)),
            _ => None,
        }
    }

    /// Takes `owner` out of its dependents' `ownerReferences`.
    pub(super) fn orphan_dependents(&self, owner: &StoredObject) -> Vec<Write> {
        self.dependents_of(&owner.uid)
            .filter_map(|o| delete::orphaned(&o.object().ok()?, &owner.uid))
            .map(|v| Write::Put(ChangeType::Modified, v))
            .collect()
    }

    /// Whether `writes` can concern an owner in foreground deletion at all: the cheap test
    /// that keeps every other write (a pod's status, say) from paying for the full one.
    fn may_release(&self, writes: &[Write]) -> bool {
        let held = |o: &StoredObject| o.finalizers.iter().any(|f| f == FOREGROUND);
        writes.iter().any(|w| {
            let (Write::Put(_, v) | Write::Remove(v)) = w;
            let meta = v.meta();
            let ns = v.namespace();
            let before = self.objects.get(&key(v.kind(), ns, v.name()));
            let marks = meta.finalizers.iter().flatten().any(|f| f == FOREGROUND);
            let refs = meta.owner_references.iter().flatten();
            let named = refs.filter_map(|r| self.owner_named(&r.kind, &r.name, ns));
            let old_owners = before
                .into_iter()
                .flat_map(|b| b.owners.iter())
                .filter_map(|r| self.owner_named(&r.kind, &r.name, ns));
            marks || named.chain(old_owners).any(|o| held(o))
        })
    }

    /// A new object all of whose owners are gone (of kinds the store keeps, by group and
    /// kind; another UID or none under that name, or one in foreground deletion, which
    /// waits for its dependents to go) is refused: the garbage collector would delete it at
    /// once. A controller's create that raced its owner's deletion ends here instead of
    /// leaving a pod no one owns running.
    pub(super) fn check_owners(&self, o: &AnyObject) -> Result<(), Error> {
        let refs = o.meta().owner_references.as_deref().unwrap_or_default();
        let ns = o.namespace();
        let ours = |r: &OwnerReference| {
            let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
            kind_named(&r.kind).is_some_and(|k| Resource::of(k).group == group)
        };
        let gone = |r: &&OwnerReference| {
            ours(r)
                && self.owner_named(&r.kind, &r.name, ns).is_none_or(|x| {
                    *x.uid != *r.uid || x.finalizers.iter().any(|f| f == FOREGROUND)
                })
        };
        let Some(first) = refs.first().filter(|_| refs.iter().all(|r| gone(&r))) else {
            return Ok(());
        };
        Err(Error::Invalid {
            kind: o.kind().as_str().to_string(),
            name: o.name().to_string(),
            errors: FieldErrors(vec![FieldError::invalid(
                &FieldPath::new("metadata.ownerReferences"),
                &format!("{}/{} ({})", first.kind, first.name, first.uid),
                "the owner no longer exists: its dependents are garbage collected",
            )]),
        })
    }

    /// The object an owner reference from namespace `ns` names, if one exists.
    fn owner_named(&self, kind: &str, name: &str, ns: &str) -> Option<&Arc<StoredObject>> {
        let k = kind_named(kind)?;
        let ns = if k.namespaced() { ns } else { "" };
        self.objects.get(&key(k, ns, name))
    }

    /// `owner` marked for foreground deletion: held by the finalizer until its dependents
    /// are gone.
    pub(super) fn foreground_mark(owner: &StoredObject) -> Option<Write> {
        let mut v = owner.object().ok()?;
        let meta = v.meta_mut();
        if meta.deletion_timestamp.is_none() {
            meta.deletion_timestamp = Some(podvisor_core::time::now());
        }
        meta.deletion_grace_period_seconds = Some(0);
        let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == FOREGROUND) {
            finalizers.push(FOREGROUND.into());
        }
        Some(Write::Put(ChangeType::Modified, v))
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
            let (Write::Put(_, v) | Write::Remove(v)) = w;
            note(&object_of(v), &mut candidates);
        }
        let mut out = Vec::new();
        while let Some((r, ns)) = candidates.pop() {
            let Some(owner) = overlay.owner(&r, &ns) else {
                continue;
            };
            if !owner.finalizers.iter().any(|f| f == FOREGROUND) || overlay.blocked(&owner) {
                continue;
            }
            let Ok(mut released) = owner.object() else {
                continue;
            };
            let kept: Vec<String> = owner
                .finalizers
                .iter()
                .filter(|f| *f != FOREGROUND)
                .cloned()
                .collect();
            let empty = kept.is_empty();
            released.meta_mut().finalizers = (!empty).then_some(kept);
            let w = if empty && owner.deleting {
                note(&owner, &mut candidates);
                Write::Remove(released)
            } else {
                Write::Put(ChangeType::Modified, released)
            };
            overlay.apply(&w);
            out.push(w);
        }
        out
    }
}
