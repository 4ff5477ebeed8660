//! Admission of the workload kinds beyond ReplicaSets: Deployments (apps/v1) and Jobs
//! (batch/v1) defaulted and validated as kube-apiserver does, with what an update may not
//! change. What podvisor's controllers cannot honour is refused with the field and why.

mod deployment;
mod job;

pub(crate) use deployment::admit as deployment;
pub(crate) use job::admit as job;

use podvisor_core::validation::{FieldError, FieldPath};
use serde::Serialize;

/// `spec.<field>` must not change (compared as the client's JSON would be).
fn immutable<T: PartialEq + Serialize>(field: &str, old: &T, new: &T, out: &mut Vec<FieldError>) {
    if old != new {
        let value = serde_json::to_string(new).unwrap_or_default();
        let path = FieldPath::new("spec").child(field);
        out.push(FieldError::invalid(&path, &value, "field is immutable"));
    }
}

/// A field podvisor does not honour, refused with why.
fn unsupported(path: &FieldPath, why: &str) -> FieldError {
    FieldError::forbidden(path, &format!("not supported by podvisor: {why}"))
}
