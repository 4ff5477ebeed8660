//! Deletion as the API defines it: preconditions, graceful deletion of pods (the object
//! stays, marked with `deletionTimestamp` and `deletionGracePeriodSeconds`, until the node
//! agent has stopped it and deletes it again with grace 0), finalizers that hold removal,
//! and what happens to dependents (`propagationPolicy`).

use podvisor_core::{Kind, Phase};
use serde_json::Value;

use crate::error::StoreError;
use crate::meta;
use crate::object::{Resource, StoredObject};

/// What happens to objects that name the deleted one in their `ownerReferences`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted with their owner (kube-apiserver does it soon after, through
    /// its garbage collector; here it is in the same write).
    #[default]
    Background,
    /// The owner stays, held by the `foregroundDeletion` finalizer, until no dependent
    /// that blocks it (`blockOwnerDeletion`) is left.
    Foreground,
    /// Dependents stay, without the owner reference.
    Orphan,
}

impl Propagation {
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(StoreError::BadRequest(format!(
                "propagationPolicy {other:?} is not one of Background, Foreground, Orphan"
            ))),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `None`: the object's own (a pod's `terminationGracePeriodSeconds`, else 30).
    pub grace_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_revision: Option<u64>,
    pub propagation: Propagation,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// What the node agent sends once a pod has stopped: remove it now, if it is still
    /// the incarnation it stopped.
    pub fn now_if_uid(uid: &str) -> Self {
        Self {
            grace_seconds: Some(0),
            precondition_uid: Some(uid.to_string()),
            ..Self::default()
        }
    }
}

/// What one delete request does to the object.
pub(crate) enum DeleteStep {
    /// Gone now, with this last state (a pod's marked deleted with grace 0, as
    /// kube-apiserver's DELETED event shows it, so the node agent stops it at once).
    Remove(Value),
    /// Kept, marked for deletion (grace period or finalizers).
    Mark(Value),
    /// Already marked with a grace period no longer than this request's.
    Unchanged,
}

fn conflict(res: &Resource, name: &str, reason: String) -> StoreError {
    StoreError::Conflict {
        resource: res.qualified(),
        name: name.to_string(),
        reason,
    }
}

fn check_preconditions(
    res: &Resource,
    o: &StoredObject,
    opts: &DeleteOptions,
) -> Result<(), StoreError> {
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| **u != *o.uid) {
        let reason = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            &*o.uid
        );
        return Err(conflict(res, &o.name, reason));
    }
    if let Some(rv) = opts.precondition_revision.filter(|r| *r != o.revision) {
        let reason = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            o.revision
        );
        return Err(conflict(res, &o.name, reason));
    }
    Ok(())
}

/// The grace period a pod gets: none when it never ran here or has finished.
fn pod_grace(v: &Value, asked: Option<i64>) -> i64 {
    let spec = &v["spec"];
    let own = spec["terminationGracePeriodSeconds"].as_i64().unwrap_or(30);
    let unbound = spec["nodeName"].as_str().unwrap_or_default().is_empty();
    let phase = v["status"]["phase"]
        .as_str()
        .and_then(|p| p.parse::<Phase>().ok());
    if unbound || phase.is_some_and(Phase::is_terminal) {
        return 0;
    }
    asked.unwrap_or(own).max(0)
}

fn has_finalizers(v: &Value) -> bool {
    v["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
}

pub(crate) fn plan(
    res: &Resource,
    o: &StoredObject,
    opts: &DeleteOptions,
) -> Result<DeleteStep, StoreError> {
    check_preconditions(res, o, opts)?;
    let mut v = o.value();
    let grace = match res.kind {
        Kind::Pod => pod_grace(&v, opts.grace_seconds),
        _ => 0,
    };
    let meta = &v["metadata"];
    if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        let current = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
        if grace >= current {
            return Ok(DeleteStep::Unchanged);
        }
    }
    let at = podvisor_core::time::now_nanos().saturating_add(grace.saturating_mul(1_000_000_000));
    let marked_at = podvisor_core::time::from_nanos(at)
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or_else(meta::now);
    if grace == 0 && !has_finalizers(&v) {
        if res.kind == Kind::Pod {
            v["metadata"]["deletionTimestamp"] = marked_at;
            v["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        }
        return Ok(DeleteStep::Remove(v));
    }
    v["metadata"]["deletionTimestamp"] = marked_at;
    v["metadata"]["deletionGracePeriodSeconds"] = grace.into();
    Ok(DeleteStep::Mark(v))
}

/// Whether an updated object marked for deletion may go now: no finalizers left and, for a
/// pod, its grace period spent (the node agent set it to 0).
pub(crate) fn removable_after_update(res: &Resource, v: &Value) -> bool {
    let meta = &v["metadata"];
    let marked = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
    let grace = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
    marked && !has_finalizers(v) && (res.kind != Kind::Pod || grace == 0)
}

/// `v` without owner references to `owner_uid`; `None` when it had none.
pub(crate) fn orphaned(v: &Value, owner_uid: &str) -> Option<Value> {
    let refs = v["metadata"]["ownerReferences"].as_array()?;
    let kept: Vec<Value> = refs
        .iter()
        .filter(|r| r["uid"].as_str() != Some(owner_uid))
        .cloned()
        .collect();
    if kept.len() == refs.len() {
        return None;
    }
    let mut out = v.clone();
    out["metadata"]["ownerReferences"] = Value::Array(kept);
    Some(out)
}
