//! What differs between kinds in the store's bookkeeping: the status a create starts
//! with, whose status a write keeps, what counts as a spec change, and the time a node's
//! NoExecute taint appeared.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSetStatus;
use k8s_openapi::api::core::v1::{NamespaceStatus, PodStatus, Taint};
use podvisor_client::AnyObject;

/// Status is the server's to set: what a create asks for is replaced by the kind's first.
pub(crate) fn reset_status(o: &mut AnyObject) {
    match o {
        AnyObject::Pod(p) => {
            Arc::make_mut(p).status = Some(PodStatus {
                phase: Some("Pending".into()),
                ..PodStatus::default()
            });
        }
        AnyObject::ReplicaSet(rs) => {
            Arc::make_mut(rs).status = Some(ReplicaSetStatus::default());
        }
        AnyObject::Namespace(n) => {
            Arc::make_mut(n).status = Some(NamespaceStatus {
                phase: Some("Active".into()),
                ..NamespaceStatus::default()
            });
        }
        _ => {}
    }
}

/// Gives `to` the status of `from` (both of one kind with a status subresource).
pub(crate) fn copy_status(to: &mut AnyObject, from: &AnyObject) {
    match (to, from) {
        (AnyObject::Pod(t), AnyObject::Pod(f)) => Arc::make_mut(t).status = f.status.clone(),
        (AnyObject::Node(t), AnyObject::Node(f)) => Arc::make_mut(t).status = f.status.clone(),
        (AnyObject::Namespace(t), AnyObject::Namespace(f)) => {
            Arc::make_mut(t).status = f.status.clone();
        }
        (AnyObject::ReplicaSet(t), AnyObject::ReplicaSet(f)) => {
            Arc::make_mut(t).status = f.status.clone();
        }
        _ => {}
    }
}

/// Whether the spec changed (what bumps `metadata.generation`).
pub(crate) fn spec_differs(old: &AnyObject, new: &AnyObject) -> bool {
    match (old, new) {
        (AnyObject::Pod(a), AnyObject::Pod(b)) => a.spec != b.spec,
        (AnyObject::Node(a), AnyObject::Node(b)) => a.spec != b.spec,
        (AnyObject::Namespace(a), AnyObject::Namespace(b)) => a.spec != b.spec,
        (AnyObject::ReplicaSet(a), AnyObject::ReplicaSet(b)) => a.spec != b.spec,
        _ => false,
    }
}

fn same_taint(a: &Taint, b: &Taint) -> bool {
    (&a.key, &a.value, &a.effect) == (&b.key, &b.value, &b.effect)
}

/// A node's NoExecute taints carry `timeAdded`: kept from the stored taint of the same key,
/// value and effect, else the time it first appears (unless the client gave one). The
/// taint eviction scheduler counts tolerations from it, so a restart never restarts a
/// countdown.
pub(crate) fn stamp_taints(new: &mut AnyObject, old: Option<&AnyObject>) {
    let AnyObject::Node(node) = new else { return };
    let before: Vec<Taint> = match old {
        Some(AnyObject::Node(o)) => o.spec.as_ref().and_then(|s| s.taints.clone()),
        _ => None,
    }
    .unwrap_or_default();
    let needs = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.effect == "NoExecute"));
    if !needs {
        return;
    }
    let taints = Arc::make_mut(node)
        .spec
        .as_mut()
        .and_then(|s| s.taints.as_mut())
        .into_iter()
        .flatten();
    for t in taints.filter(|t| t.effect == "NoExecute") {
        let kept = before
            .iter()
            .find(|o| same_taint(o, t))
            .and_then(|o| o.time_added.clone());
        match kept {
            Some(at) => t.time_added = Some(at),
            None if t.time_added.is_some() => {}
            None => t.time_added = Some(podvisor_core::time::now()),
        }
    }
}
