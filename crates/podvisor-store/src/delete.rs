//! Deletion as the API defines it: preconditions, graceful deletion of pods (the object
//! stays, marked with `deletionTimestamp` and `deletionGracePeriodSeconds`, until the node
//! agent has stopped it and deletes it again with grace 0), and finalizers that hold
//! removal. What happens to dependents (`propagationPolicy`) is `store/dependents.rs`.

use podvisor_client::{AnyObject, DeleteParams, Error};
use podvisor_core::Phase;

use crate::object::{Resource, StoredObject};

/// What one delete request does to the object.
pub(crate) enum DeleteStep {
    /// Gone now, with this last state (a pod's marked deleted with grace 0, as
    /// kube-apiserver's DELETED event shows it, so the node agent stops it at once).
    Remove(AnyObject),
    /// Kept, marked for deletion (grace period or finalizers).
    Mark(AnyObject),
    /// Already marked with a grace period no longer than this request's.
    Unchanged,
}

fn conflict(res: &Resource, name: &str, reason: String) -> Error {
    Error::conflict(&res.qualified(), name, reason)
}

fn check_preconditions(res: &Resource, o: &StoredObject, opts: &DeleteParams) -> Result<(), Error> {
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| **u != *o.uid) {
        let reason = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            &*o.uid
        );
        return Err(conflict(res, &o.name, reason));
    }
    let asked = opts.precondition_resource_version.as_deref();
    if let Some(rv) = asked.filter(|r| *r != o.revision.to_string()) {
        let reason = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            o.revision
        );
        return Err(conflict(res, &o.name, reason));
    }
    Ok(())
}

/// The grace period a pod gets: none when it never ran here or has finished.
fn pod_grace(o: &AnyObject, asked: Option<i64>) -> i64 {
    let AnyObject::Pod(p) = o else { return 0 };
    let spec = p.spec.as_ref();
    let own = spec.and_then(|s| s.termination_grace_period_seconds);
    let node = spec.and_then(|s| s.node_name.as_deref());
    let unbound = node.unwrap_or_default().is_empty();
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    let finished = phase.and_then(|p| p.parse::<Phase>().ok());
    if unbound || finished.is_some_and(Phase::is_terminal) {
        return 0;
    }
    asked.or(own).unwrap_or(30).max(0)
}

fn has_finalizers(o: &AnyObject) -> bool {
    o.meta().finalizers.as_ref().is_some_and(|f| !f.is_empty())
}

pub(crate) fn plan(
    res: &Resource,
    o: &StoredObject,
    opts: &DeleteParams,
) -> Result<DeleteStep, Error> {
    check_preconditions(res, o, opts)?;
    let mut v = o.object()?;
    let grace = pod_grace(&v, opts.grace_seconds);
    if v.meta().deletion_timestamp.is_some() {
        let current = v.meta().deletion_grace_period_seconds.unwrap_or(0);
        // Marked with no grace left (a removal that did not finish, or a copy of
        // kube-apiserver's first write of one): it goes now, as `BeforeDelete` has it.
        if current == 0 && !has_finalizers(&v) {
            return Ok(DeleteStep::Remove(v));
        }
        if grace >= current {
            return Ok(DeleteStep::Unchanged);
        }
    }
    let at = podvisor_core::time::now_nanos().saturating_add(grace.saturating_mul(1_000_000_000));
    let marked_at = podvisor_core::time::from_nanos(at).unwrap_or_else(podvisor_core::time::now);
    let is_pod = matches!(v, AnyObject::Pod(_));
    if grace == 0 && !has_finalizers(&v) {
        if is_pod {
            let meta = v.meta_mut();
            meta.deletion_timestamp = Some(marked_at);
            meta.deletion_grace_period_seconds = Some(0);
        }
        return Ok(DeleteStep::Remove(v));
    }
    let meta = v.meta_mut();
    meta.deletion_timestamp = Some(marked_at);
    meta.deletion_grace_period_seconds = Some(grace);
    Ok(DeleteStep::Mark(v))
}

/// Whether an updated object marked for deletion may go now: no finalizers left and, for a
/// pod, its grace period spent (the node agent set it to 0).
pub(crate) fn removable_after_update(o: &AnyObject) -> bool {
    let meta = o.meta();
    let grace = meta.deletion_grace_period_seconds.unwrap_or(0);
    let is_pod = matches!(o, AnyObject::Pod(_));
    meta.deletion_timestamp.is_some() && !has_finalizers(o) && (!is_pod || grace == 0)
}

/// `o` without owner references to `owner_uid`; `None` when it had none.
pub(crate) fn orphaned(o: &AnyObject, owner_uid: &str) -> Option<AnyObject> {
    let refs = o.meta().owner_references.as_ref()?;
    if refs.iter().all(|r| r.uid != owner_uid) {
        return None;
    }
    let mut out = o.clone();
    if let Some(refs) = out.meta_mut().owner_references.as_mut() {
        refs.retain(|r| r.uid != owner_uid);
    }
    Some(out)
}
