//! `pods/ephemeralcontainers`: debuggers added to a running pod (`kubectl debug`), as
//! kube-apiserver admits them: never on create, only through the subresource (the store
//! takes nothing else from such an update), never to a static pod's mirror, and those
//! already there neither removed nor changed.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{EphemeralContainer, Pod};
use podvisor_core::PodExt;
use podvisor_core::validation::{FieldError, FieldPath};

fn path() -> FieldPath {
    FieldPath::new("spec").child("ephemeralContainers")
}

/// A pod created with ephemeral containers is refused.
pub(crate) fn on_create(pod: &Pod) -> Vec<FieldError> {
    match pod.ephemeral_containers().is_empty() {
        true => Vec::new(),
        false => vec![FieldError::forbidden(&path(), "cannot be set on create")],
    }
}

/// What an ephemeral-containers update of `old` into `new` may not do.
pub(crate) fn update_errors(old: &Pod, new: &Pod) -> Vec<FieldError> {
    if crate::admission::is_mirror(old) {
        return vec![FieldError::forbidden(
            &FieldPath::new(""),
            "static pods do not support ephemeral containers",
        )];
    }
    let now: HashMap<&str, &EphemeralContainer> = new
        .ephemeral_containers()
        .iter()
        .map(|ec| (ec.name.as_str(), ec))
        .collect();
    let mut errors = Vec::new();
    for was in old.ephemeral_containers() {
        let why = match now.get(was.name.as_str()) {
            None => "may not be removed",
            Some(ec) if *ec != was => "may not be changed",
            Some(_) => continue,
        };
        let detail = format!("existing ephemeral containers {:?} {why}", was.name);
        errors.push(FieldError::forbidden(&path(), &detail));
    }
    errors
}
