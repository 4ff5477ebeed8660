//! Pod fields podvisor cannot honour, each refused with the reason, so none is silently
//! ignored (`coverage_tests.rs` classifies every field of the pod's types and fails on a
//! new one).

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, VolumeMount};

use super::field::{FieldError, FieldErrors, FieldPath};

/// The annotation naming the fields a pod came with from the cluster that podvisor's
/// types (Kubernetes 1.37's) do not know: a newer API server's, set by the cluster client.
pub const UNKNOWN_FIELDS: &str = "podvisor.io/unknown-fields";

/// Each field [`UNKNOWN_FIELDS`] names, refused: running the pod without it would ignore
/// it silently.
pub(super) fn validate_unknown(pod: &Pod, errs: &mut FieldErrors) {
    let annotations = pod.metadata.annotations.as_ref();
    let Some(list) = annotations.and_then(|a| a.get(UNKNOWN_FIELDS)) else {
        return;
    };
    let why = "not a field of Kubernetes 1.37's Pod, whose types podvisor speaks: the API \
               server is newer and podvisor cannot honour it";
    for field in list.split(',').filter(|f| !f.is_empty()) {
        errs.push(FieldError::forbidden(&FieldPath::new(field), why));
    }
}

#[cfg(test)]
#[test]
fn fields_a_newer_server_sent_are_refused_by_name() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p", "annotations": {UNKNOWN_FIELDS: "spec.futureField,spec.containers[0].knob"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap();
    let e = super::validate_pod(&pod).unwrap_err().to_string();
    assert!(e.contains("spec.futureField: Forbidden"), "{e}");
    assert!(e.contains("spec.containers[0].knob: Forbidden"), "{e}");
}

fn refuse(set: bool, at: FieldPath, why: &str, errs: &mut FieldErrors) {
    if set {
        errs.push(FieldError::forbidden(&at, why));
    }
}

fn non_empty<T>(v: Option<&Vec<T>>) -> bool {
    v.is_some_and(|v| !v.is_empty())
}

pub(super) fn validate_spec(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    let fields: [(bool, &str, &str); 4] = [
        (
            spec.overhead.as_ref().is_some_and(|o| !o.is_empty()),
            "overhead",
            "podvisor has no RuntimeClasses and does not account pod overhead",
        ),
        (
            non_empty(spec.resource_claims.as_ref()),
            "resourceClaims",
            "podvisor does not allocate dynamic resources",
        ),
        (
            spec.resources.is_some(),
            "resources",
            "podvisor sizes containers, not pods: set each container's resources",
        ),
        (
            spec.runtime_class_name
                .as_deref()
                .is_some_and(|r| !r.is_empty()),
            "runtimeClassName",
            "podvisor runs every pod with the runtime's default handler",
        ),
    ];
    for (set, field, why) in fields {
        refuse(set, path.child(field), why, errs);
    }
    // A valid OS other than the node's is the node's to refuse (`PodOSNotSupported`,
    // `node_admit`), as the kubelet does; anything else is no OS Kubernetes knows.
    if let Some(os) = spec
        .os
        .as_ref()
        .filter(|os| !["linux", "windows"].contains(&os.name.as_str()))
    {
        errs.push(FieldError::not_supported(
            &path.child("os").child("name"),
            &os.name,
            &["linux", "windows"],
        ));
    }
}

pub(super) fn validate_container(c: &Container, path: &FieldPath, errs: &mut FieldErrors) {
    let claims = c.resources.as_ref().and_then(|r| r.claims.as_ref());
    let fields: [(bool, FieldPath, &str); 2] = [
        (
            non_empty(claims),
            path.child("resources").child("claims"),
            "podvisor does not allocate dynamic resources",
        ),
        (
            non_empty(c.volume_devices.as_ref()),
            path.child("volumeDevices"),
            "podvisor does not attach block devices",
        ),
    ];
    for (set, at, why) in fields {
        refuse(set, at, why, errs);
    }
}

const PROPAGATION: [&str; 3] = ["None", "HostToContainer", "Bidirectional"];
const RECURSIVE: [&str; 3] = ["Disabled", "IfPossible", "Enabled"];

pub(super) fn validate_mount(
    m: &VolumeMount,
    privileged: bool,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(p) = m.mount_propagation.as_deref() {
        let at = path.child("mountPropagation");
        if !PROPAGATION.contains(&p) {
            errs.push(FieldError::not_supported(&at, p, &PROPAGATION));
        } else if p == "Bidirectional" && !privileged {
            errs.push(FieldError::forbidden(
                &at,
                "Bidirectional mount propagation is available only to privileged containers",
            ));
        }
    }
    match m.recursive_read_only.as_deref() {
        None | Some("Disabled" | "IfPossible") => {}
        Some("Enabled") => errs.push(FieldError::forbidden(
            &path.child("recursiveReadOnly"),
            "podvisor does not make recursively read-only mounts (IfPossible falls back to read-only)",
        )),
        Some(other) => errs.push(FieldError::not_supported(&path.child("recursiveReadOnly"), other, &RECURSIVE)),
    }
    refuse(
        m.sub_path_expr.as_deref().is_some_and(|s| !s.is_empty()),
        path.child("subPathExpr"),
        "podvisor does not expand subPathExpr: use subPath",
        errs,
    );
}
