//! Namespace deletion as kube-apiserver and the namespace controller do it together, in
//! the store's transactions: the delete marks the namespace (`deletionTimestamp`, phase
//! `Terminating`) and deletes every object in it (pods gracefully, so the node stops them
//! first); nothing new may be created in it; the write that removes the last object in it
//! removes the namespace too (at once, when nothing in it waits for a grace period or a
//! finalizer).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, NamespaceStatus};
use podvisor_client::{AnyObject, DeleteParams, Error, PostParams};
use podvisor_core::Kind;

use super::{Store, Write, key};
use crate::delete::{self, DeleteStep};
use crate::object::{ChangeType, Resource, StoredObject};

/// Namespaces that always exist (made at open, never deleted), as in a cluster.
pub(super) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

fn terminating(ns: &StoredObject) -> bool {
    ns.deleting
}

impl Store {
    pub(super) fn ensure_namespaces(&mut self) -> Result<(), Error> {
        let res = Resource::of(Kind::Namespace);
        for ns in SYSTEM_NAMESPACES {
            if self.get(Kind::Namespace, "", ns).is_err() {
                let mut n = Namespace::default();
                n.metadata.name = Some(ns.to_string());
                self.create(&res, AnyObject::new(n), None, PostParams::default())?;
            }
        }
        Ok(())
    }

    /// Refuses new content in a namespace being deleted.
    pub(super) fn check_not_terminating(
        &self,
        res: &Resource,
        ns: &str,
        name: &str,
    ) -> Result<(), Error> {
        let kind = res.kind;
        let namespace = self.objects.get(&key(Kind::Namespace, "", ns));
        let Some(n) = namespace.filter(|_| res.namespaced()) else {
            return Ok(());
        };
        if !terminating(n) {
            return Ok(());
        }
        Err(Error::Forbidden {
            resource: Resource::of(kind).qualified(),
            name: name.to_string(),
            cause: "NamespaceTerminating".into(),
            message: format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        })
    }

    fn contents<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = &'a Arc<StoredObject>> + 'a {
        self.objects
            .values()
            .filter(move |o| o.kind.namespaced() && o.namespace == ns)
    }

    /// Deleting the namespace `n`: marked, its contents deleted, and removed if they all
    /// went at once.
    pub(super) fn delete_namespace(&self, n: &StoredObject) -> Result<Vec<Write>, Error> {
        let mut writes = Vec::new();
        let mut emptied = true;
        for o in self.contents(&n.name) {
            match delete::plan(&Resource::of(o.kind), o, &DeleteParams::default()) {
                Ok(DeleteStep::Mark(v)) => writes.push(Write::Put(ChangeType::Modified, v)),
                Ok(DeleteStep::Remove(v)) => writes.push(Write::Remove(v)),
                // Already being deleted (a pod stopping, a finalizer held): still there.
                _ => {}
            }
            emptied &= matches!(writes.last(), Some(Write::Remove(v)) if v.name() == o.name && v.kind() == o.kind);
        }
        let mut marked = n.object()?;
        if let AnyObject::Namespace(ns) = &mut marked {
            let ns = Arc::make_mut(ns);
            if ns.metadata.deletion_timestamp.is_none() {
                ns.metadata.deletion_timestamp = Some(podvisor_core::time::now());
            }
            let status = ns.status.get_or_insert_with(NamespaceStatus::default);
            status.phase = Some("Terminating".into());
        }
        writes.insert(
            0,
            if emptied {
                Write::Remove(marked)
            } else {
                Write::Put(ChangeType::Modified, marked)
            },
        );
        Ok(writes)
    }

    /// The namespaces being deleted that `writes` leave empty: removed in the same batch.
    pub(super) fn finish_namespaces(&self, writes: &[Write]) -> Vec<Write> {
        let mut out = Vec::new();
        // Namespaces this batch already removes.
        let mut done: Vec<String> = writes
            .iter()
            .filter_map(|w| match w {
                Write::Remove(v) if v.kind() == Kind::Namespace => Some(v.name().to_string()),
                _ => None,
            })
            .collect();
        for w in writes {
            let Write::Remove(o) = w else { continue };
            let ns = o.namespace();
            if !o.kind().namespaced() || done.iter().any(|d| d == ns) {
                continue;
            }
            let Some(n) = self.objects.get(&key(Kind::Namespace, "", ns)) else {
                continue;
            };
            if !terminating(n) || !self.left_empty(ns, writes) {
                continue;
            }
            done.push(ns.to_string());
            if let Ok(v) = n.object() {
                out.push(Write::Remove(v));
            }
        }
        out
    }

    /// Whether nothing is left in `ns` once `writes` are made.
    fn left_empty(&self, ns: &str, writes: &[Write]) -> bool {
        let removed = |o: &StoredObject| {
            writes.iter().any(|w| {
                matches!(w, Write::Remove(v) if v.kind() == o.kind && v.namespace() == ns && v.name() == o.name)
            })
        };
        let added = writes.iter().any(|w| {
            matches!(w, Write::Put(ChangeType::Added, v) if v.kind().namespaced() && v.namespace() == ns)
        });
        !added && self.contents(ns).all(|o| removed(o))
    }
}
