//! What a change to a pod means to the ReplicaSet controller (its informer's event
//! handlers): which ReplicaSets to sync, and which expectations it meets.
//!
//! - a pod added (or first seen) with a controller reference: a creation its owner
//!   expected; sync the owner. Added already being deleted: a deletion instead;
//! - an orphan added or relabelled: sync every ReplicaSet of its namespace that selects it
//!   (one of them may adopt it);
//! - a pod being deleted or gone: a deletion its owner expected; sync the owner;
//! - an owner reference that changed: sync the old owner too;
//! - a pod that became ready: sync its owner, and again once `minReadySeconds` have passed.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{Kind, ObjectKey, PodUid};
use podvisor_machinery::cache::{Cache, Delta};
use podvisor_machinery::expectations::Expectations;

use super::pods::{controller_of, is_ready, labels, selects};

pub type RsExpectations = Expectations<ObjectKey, PodUid>;

/// Sync `key`, now or after a delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueue {
    pub key: ObjectKey,
    pub after: Duration,
}

fn now(key: ObjectKey) -> Enqueue {
    Enqueue {
        key,
        after: Duration::ZERO,
    }
}

fn rs_key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Kind::ReplicaSet, Some(ns), name)
}

/// The ReplicaSet `pod` names as its controller, when the cache holds that one.
pub fn owner(sets: &Cache<ReplicaSet>, pod: &Pod) -> Option<ObjectKey> {
    let r = controller_of(pod)?;
    if r.kind != "ReplicaSet" {
        return None;
    }
    let key = rs_key(pod.metadata.namespace.as_deref().unwrap_or(""), &r.name);
    let cached = sets.get(&key)?;
    (cached.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
}

/// The ReplicaSets of the pod's namespace that select it.
fn selecting(sets: &Cache<ReplicaSet>, pod: &Pod) -> Vec<Enqueue> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let have = labels(pod);
    sets.in_namespace(ns)
        .filter(|rs| selects(&rs.spec.selector, &have))
        .map(|rs| now(rs_key(ns, rs.metadata.name.as_deref().unwrap_or(""))))
        .collect()
}

fn uid(pod: &Pod) -> PodUid {
    PodUid::from(pod.metadata.uid.as_deref().unwrap_or(""))
}

/// A pod being deleted or gone: its owner's expected deletion; and room on the node for
/// the ReplicaSets whose creates were refused.
fn deleted(sets: &Cache<ReplicaSet>, pod: &Pod, exp: &mut RsExpectations) -> Vec<Enqueue> {
    let mut out = failing(sets);
    if let Some(key) = owner(sets, pod) {
        exp.deletion_observed(&key, &uid(pod));
        out.push(now(key));
    }
    out
}

/// Every ReplicaSet whose last sync failed (the `ReplicaFailure` condition): something
/// that may let it succeed happened (a pod left the node, the node changed), so it is tried
/// now rather than when its backoff (up to 1,000 s) runs out.
pub fn failing(sets: &Cache<ReplicaSet>) -> Vec<Enqueue> {
    sets.values()
        .filter(|rs| {
            let conditions = rs.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions.is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_.as_deref() == Some("ReplicaFailure"))
            })
        })
        .map(|rs| {
            let m = &rs.metadata;
            now(rs_key(
                m.namespace.as_deref().unwrap_or(""),
                m.name.as_deref().unwrap_or(""),
            ))
        })
        .collect()
}

fn min_ready(sets: &Cache<ReplicaSet>, key: &ObjectKey) -> i32 {
    sets.get(key)
        .map(|rs| &rs.spec)
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn added(sets: &Cache<ReplicaSet>, pod: &Pod, exp: &mut RsExpectations) -> Vec<Enqueue> {
    if pod.metadata.deletion_timestamp.is_some() {
        return deleted(sets, pod, exp);
    }
    match owner(sets, pod) {
        Some(key) => {
            exp.creation_observed(&key);
            vec![now(key)]
        }
        None if controller_of(pod).is_none() => selecting(sets, pod),
        None => Vec::new(),
    }
}

fn updated(
    sets: &Cache<ReplicaSet>,
    old: &Pod,
    new: &Pod,
    exp: &mut RsExpectations,
) -> Vec<Enqueue> {
    if new.metadata.resource_version.is_some()
        && old.metadata.resource_version == new.metadata.resource_version
    {
        return Vec::new();
    }
    if new.metadata.deletion_timestamp.is_some() {
        let mut out = deleted(sets, new, exp);
        if labels(old) != labels(new) {
            out.extend(deleted(sets, old, exp));
        }
        return out;
    }
    let mut out = Vec::new();
    let ref_changed = controller_of(old) != controller_of(new);
    if ref_changed && let Some(k) = owner(sets, old) {
        out.push(now(k));
    }
    match owner(sets, new) {
        Some(key) => {
            let min = min_ready(sets, &key);
            if !is_ready(old) && is_ready(new) && min > 0 {
                let after = Duration::from_secs(u64::try_from(min).unwrap_or(0) + 1);
                out.push(Enqueue {
                    key: key.clone(),
                    after,
                });
            }
            out.push(now(key));
        }
        None if controller_of(new).is_none() && (ref_changed || labels(old) != labels(new)) => {
            out.extend(selecting(sets, new));
        }
        None => {}
    }
    out
}

/// What one pod change means.
pub fn on_pod(d: &Delta<Pod>, sets: &Cache<ReplicaSet>, exp: &mut RsExpectations) -> Vec<Enqueue> {
    match (&d.old, &d.new) {
        (None, Some(new)) => added(sets, new, exp),
        (Some(old), Some(new)) => updated(sets, old, new, exp),
        (Some(old), None) => deleted(sets, old, exp),
        (None, None) => Vec::new(),
    }
}

/// What one ReplicaSet change means: sync it; one gone takes its expectations with it.
pub fn on_replica_set(d: &Delta<ReplicaSet>, exp: &mut RsExpectations) -> Vec<Enqueue> {
    let key = ObjectKey::new(Kind::ReplicaSet, d.key.namespace.as_deref(), &d.key.name);
    let replaced = match (&d.old, &d.new) {
        (Some(o), Some(n)) => o.metadata.uid != n.metadata.uid,
        (_, None) => true,
        _ => false,
    };
    if replaced {
        exp.forget(&key);
    }
    vec![now(key)]
}
