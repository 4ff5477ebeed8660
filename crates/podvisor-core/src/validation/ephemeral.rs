//! Ephemeral containers (a debugger added to a running pod, `kubectl debug`), checked as
//! kube-apiserver checks them (`validateEphemeralContainers`): a container's own rules, a
//! name no other container of the pod has, a `targetContainerName` that is one of the
//! pod's other containers, and none of what would make a workload of it (ports, probes,
//! lifecycle hooks, resources, a restart policy, subPath mounts).

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{EphemeralContainer, PodSpec};

use super::field::{FieldError, FieldErrors, FieldPath};
use super::security;
use crate::pod::ephemeral_as_container;

const WHY: &str = "cannot be set for an Ephemeral Container";

/// The fields an ephemeral container may not set, by name, and whether it sets each.
fn workload_fields(ec: &EphemeralContainer) -> [(&'static str, bool); 9] {
    let some_vec = |v: Option<usize>| v.is_some_and(|n| n > 0);
    [
        ("ports", some_vec(ec.ports.as_ref().map(Vec::len))),
        (
            "resources",
            ec.resources
                .as_ref()
                .is_some_and(|r| r != &Default::default()),
        ),
        (
            "resizePolicy",
            some_vec(ec.resize_policy.as_ref().map(Vec::len)),
        ),
        ("livenessProbe", ec.liveness_probe.is_some()),
        ("readinessProbe", ec.readiness_probe.is_some()),
        ("startupProbe", ec.startup_probe.is_some()),
        ("lifecycle", ec.lifecycle.is_some()),
        ("restartPolicy", ec.restart_policy.is_some()),
        (
            "restartPolicyRules",
            some_vec(ec.restart_policy_rules.as_ref().map(Vec::len)),
        ),
    ]
}

/// Checks each of `spec`'s ephemeral containers; `names` holds the pod's other container
/// names (and gets these).
pub(super) fn validate(
    spec: &PodSpec,
    path: &FieldPath,
    (volumes, names): (&HashSet<&str>, &mut HashSet<String>),
    errs: &mut FieldErrors,
) {
    let others: HashSet<String> = names.clone();
    for (i, ec) in spec.ephemeral_containers.iter().flatten().enumerate() {
        let at = path.child("ephemeralContainers").index(i);
        let c = ephemeral_as_container(ec);
        super::pod::validate_container(&c, &at, volumes, errs);
        security::validate_container(&c, &at, errs);
        if !names.insert(ec.name.clone()) {
            errs.push(FieldError::duplicate(&at.child("name"), &ec.name));
        }
        if let Some(target) = ec
            .target_container_name
            .as_deref()
            .filter(|t| !t.is_empty())
            && !others.contains(target)
        {
            errs.push(FieldError::not_found(
                &at.child("targetContainerName"),
                target,
            ));
        }
        for (field, set) in workload_fields(ec) {
            if set {
                errs.push(FieldError::forbidden(&at.child(field), WHY));
            }
        }
        for (j, m) in ec.volume_mounts.iter().flatten().enumerate() {
            let mount = at.child("volumeMounts").index(j);
            if m.sub_path.as_deref().is_some_and(|s| !s.is_empty()) {
                errs.push(FieldError::forbidden(&mount.child("subPath"), WHY));
            }
        }
    }
}
