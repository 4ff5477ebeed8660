//! A container's `resizePolicy`, as kube-apiserver validates it: one entry at most per
//! resource, only `cpu` and `memory`, each `NotRequired` or `RestartContainer`; only
//! `NotRequired` in a pod that never restarts, and never `RestartContainer` for an init
//! container that is not a sidecar.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::Container;

use super::field::{FieldError, FieldErrors, FieldPath};

const RESOURCES: [&str; 2] = ["cpu", "memory"];
const POLICIES: [&str; 2] = ["NotRequired", "RestartContainer"];

/// `never`: the pod's `restartPolicy` is `Never`; `init`: a non-sidecar init container.
pub(super) fn validate(
    c: &Container,
    path: &FieldPath,
    (never, init): (bool, bool),
    errs: &mut FieldErrors,
) {
    let mut seen = HashSet::new();
    for (i, p) in c.resize_policy.iter().flatten().enumerate() {
        let at = path.child("resizePolicy").index(i);
        let name = at.child("resourceName");
        if !RESOURCES.contains(&p.resource_name.as_str()) {
            errs.push(FieldError::not_supported(
                &name,
                &p.resource_name,
                &RESOURCES,
            ));
        } else if !seen.insert(p.resource_name.as_str()) {
            errs.push(FieldError::duplicate(&name, &p.resource_name));
        }
        let policy = at.child("restartPolicy");
        if !POLICIES.contains(&p.restart_policy.as_str()) {
            errs.push(FieldError::not_supported(
                &policy,
                &p.restart_policy,
                &POLICIES,
            ));
        } else if p.restart_policy == "RestartContainer" && never {
            let detail = "must be 'NotRequired' when pod `restartPolicy` is 'Never'";
            errs.push(FieldError::invalid(&policy, &p.restart_policy, detail));
        } else if p.restart_policy == "RestartContainer" && init {
            let detail = "must not be set to 'RestartContainer' for non-sidecar initContainers";
            errs.push(FieldError::invalid(&policy, &p.restart_policy, detail));
        }
    }
}
