//! What a change means to the Deployment controller: a Deployment changed, sync it; a
//! ReplicaSet changed, sync the Deployment controlling it, or (an orphan) those of its
//! namespace that select it, one of which may adopt it.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use podvisor_core::labels::selects;
use podvisor_core::{Kind, ObjectKey};
use podvisor_machinery::cache::{Cache, Delta};

fn key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Deployment, Some(ns), name)
}

/// The Deployment `rs` names as its controller, when the cache holds that one.
fn owner(deployments: &Cache<Deployment>, rs: &ReplicaSet) -> Option<ObjectKey> {
    let refs = rs.metadata.owner_references.as_ref()?;
    let r = refs.iter().find(|r| r.controller == Some(true))?;
    if r.kind != "Deployment" {
        return None;
    }
    let k = key(
        rs.metadata.namespace.as_deref().unwrap_or_default(),
        &r.name,
    );
    let cached = deployments.get(&k)?;
    (cached.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(k)
}

fn is_orphan(rs: &ReplicaSet) -> bool {
    let refs = rs.metadata.owner_references.iter().flatten();
    !refs.into_iter().any(|r| r.controller == Some(true))
}

/// The Deployments of the ReplicaSet's namespace whose selector matches it.
fn selecting(deployments: &Cache<Deployment>, rs: &ReplicaSet) -> Vec<ObjectKey> {
    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    deployments
        .in_namespace(ns)
        .filter(|d| {
            d.spec
                .as_ref()
                .is_some_and(|s| selects(&s.selector, &labels))
        })
        .map(|d| key(ns, d.metadata.name.as_deref().unwrap_or_default()))
        .collect()
}

/// The Deployments one ReplicaSet change concerns.
pub fn on_replica_set(d: &Delta<ReplicaSet>, deployments: &Cache<Deployment>) -> Vec<ObjectKey> {
    let mut out = Vec::new();
    for rs in [&d.old, &d.new].into_iter().flatten() {
        match owner(deployments, rs) {
            Some(k) => out.push(k),
            None if is_orphan(rs) => out.extend(selecting(deployments, rs)),
            None => {}
        }
    }
    out.dedup();
    out
}

pub fn on_deployment(d: &Delta<Deployment>) -> ObjectKey {
    ObjectKey::new(Kind::Deployment, d.key.namespace.as_deref(), &d.key.name)
}
