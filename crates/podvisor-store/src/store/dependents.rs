//! Garbage collection of dependents, in the same transaction as the write that calls for
//! it (kube-apiserver's garbage collector does the same work soon after):
//!
//! - an owner removed (or removed with `propagationPolicy: Background`): the objects that
//!   name it in `ownerReferences` are deleted (pods gracefully);
//! - `Orphan`: they lose the reference instead;
//! - `Foreground`: the owner stays, marked for deletion and held by the
//!   `foregroundDeletion` finalizer, while its dependents are deleted; once the last
//!   dependent that blocks it (`blockOwnerDeletion`) is gone, the finalizer goes, and so does
//!   the owner if nothing else holds it.

use std::collections::HashSet;
use std::sync::Arc;

use podvisor_core::{Kind, Uid};
use serde_json::{Value, json};

use super::{Store, Write, key};
use crate::delete::{self, DeleteOptions, DeleteStep};
use crate::object::{ChangeType, Resource, StoredObject};

pub(crate) const FOREGROUND: &str = "foregroundDeletion";

fn kind_named(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.as_str() == name)
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

    /// Deletes (gracefully, for pods) every object `owner` owns.
    pub(super) fn delete_dependents(&self, owner: &StoredObject) -> Vec<Write> {
        self.dependents_of(&owner.uid)
            .filter_map(|o| {
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

    /// The owners in foreground deletion that the removals in `writes` leave without
    /// blocking dependents: their finalizer goes (and they go, if nothing else holds them).
    /// Repeats for what that removes in turn.
    pub(super) fn release_owners(&self, writes: &[Write]) -> Vec<Write> {
        let mut out: Vec<Write> = Vec::new();
        let mut gone: HashSet<Uid> = removed_uids(writes);
        let mut frontier: Vec<Value> = removed_values(writes);
        while let Some(v) = frontier.pop() {
            for owner in self.foreground_owners(&v) {
                let blocked = self.dependents_of(&owner.uid).any(|d| {
                    !gone.contains(&d.uid)
                        && d.owners
                            .iter()
                            .any(|r| *r.uid == *owner.uid && r.block_owner_deletion)
                });
                if blocked
                    || out
                        .iter()
                        .any(|w| written_uid(w).as_deref() == Some(&*owner.uid))
                {
                    continue;
                }
                let mut released = owner.value();
                let kept: Vec<&String> = owner
                    .finalizers
                    .iter()
                    .filter(|f| *f != FOREGROUND)
                    .collect();
                released["metadata"]["finalizers"] = json!(kept);
                if kept.is_empty() {
                    gone.insert(owner.uid.clone());
                    frontier.push(released.clone());
                    out.push(Write::Remove(owner.kind, released));
                } else {
                    out.push(Write::Put(ChangeType::Modified, released));
                }
            }
        }
        out
    }

    /// The owners named by `v` that are in foreground deletion.
    fn foreground_owners(&self, v: &Value) -> Vec<Arc<StoredObject>> {
        let ns = v["metadata"]["namespace"].as_str().unwrap_or_default();
        v["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let kind = kind_named(r["kind"].as_str()?)?;
                let ns = if kind.namespaced() { ns } else { "" };
                let o = self.objects.get(&key(kind, ns, r["name"].as_str()?))?;
                let ours = r["uid"].as_str() == Some(&*o.uid);
                (ours && o.finalizers.iter().any(|f| f == FOREGROUND)).then(|| o.clone())
            })
            .collect()
    }
}

fn removed_values(writes: &[Write]) -> Vec<Value> {
    writes
        .iter()
        .filter_map(|w| match w {
            Write::Remove(_, v) => Some(v.clone()),
            Write::Put(..) => None,
        })
        .collect()
}

fn removed_uids(writes: &[Write]) -> HashSet<Uid> {
    removed_values(writes)
        .iter()
        .filter_map(|v| v["metadata"]["uid"].as_str().map(Uid::from))
        .collect()
}

fn written_uid(w: &Write) -> Option<String> {
    let v = match w {
        Write::Put(_, v) | Write::Remove(_, v) => v,
    };
    v["metadata"]["uid"].as_str().map(str::to_string)
}
