//! `pods/resize`: the CPU and memory of a running pod's containers changed in place, as
//! kube-apiserver's `ValidatePodResize` admits it. The store takes only the containers'
//! resources and resize policies from such an update (and refuses one that renames,
//! adds or removes containers); this refuses the rest: a static pod's mirror, another
//! QoS class, requests or limits removed, anything but CPU and memory changed, a changed
//! resize policy, and a non-sidecar init container restarted by its policy.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use podvisor_core::qos::qos_class;
use podvisor_core::validation::{FieldError, FieldPath};

type Quantities = Option<BTreeMap<String, Quantity>>;

const MUTABLE: [&str; 2] = ["cpu", "memory"];

/// The quantities but CPU and memory.
fn others(q: &Quantities) -> BTreeMap<String, Quantity> {
    let mut q = q.clone().unwrap_or_default();
    q.retain(|k, _| !MUTABLE.contains(&k.as_str()));
    q
}

fn removed(old: &Quantities, new: &Quantities) -> bool {
    let new = new.clone().unwrap_or_default();
    old.iter()
        .flatten()
        .any(|(k, _)| MUTABLE.contains(&k.as_str()) && !new.contains_key(k))
}

fn resource_errors(path: &FieldPath, old: &Container, new: &Container) -> Vec<FieldError> {
    let none = ResourceRequirements::default();
    let o = old.resources.as_ref().unwrap_or(&none);
    let n = new.resources.as_ref().unwrap_or(&none);
    let path = path.child("resources");
    let mut errors = Vec::new();
    if removed(&o.requests, &n.requests) {
        let detail = "resource requests cannot be removed";
        errors.push(FieldError::forbidden(&path.child("requests"), detail));
    }
    if removed(&o.limits, &n.limits) {
        let detail = "resource limits cannot be removed";
        errors.push(FieldError::forbidden(&path.child("limits"), detail));
    }
    let unchanged = others(&o.requests) == others(&n.requests)
        && others(&o.limits) == others(&n.limits)
        && o.claims == n.claims
        && old.resize_policy == new.resize_policy;
    if !unchanged {
        let detail = "only cpu and memory resources are mutable";
        errors.push(FieldError::forbidden(&FieldPath::new("spec"), detail));
    }
    errors
}

fn restarts(c: &Container) -> bool {
    c.resize_policy
        .iter()
        .flatten()
        .any(|p| p.restart_policy == "RestartContainer")
}

/// What a resize of `old` into `new` may not do.
pub(crate) fn update_errors(old: &Pod, new: &Pod) -> Vec<FieldError> {
    if crate::admission::is_mirror(old) {
        let detail = "static pods cannot be resized";
        return vec![FieldError::forbidden(&FieldPath::new(""), detail)];
    }
    let mut errors = Vec::new();
    let (old_qos, new_qos) = (qos_class(old), qos_class(new));
    if old_qos != new_qos {
        let detail = "Pod QOS Class may not change as a result of resizing";
        errors.push(FieldError::invalid(
            &FieldPath::new("spec"),
            new_qos.as_str(),
            detail,
        ));
    }
    let spec = |p: &Pod| p.spec.clone().unwrap_or_default();
    let (o, n) = (spec(old), spec(new));
    let path = FieldPath::new("spec").child("containers");
    for (i, (a, b)) in o.containers.iter().zip(&n.containers).enumerate() {
        errors.extend(resource_errors(&path.index(i), a, b));
    }
    let path = FieldPath::new("spec").child("initContainers");
    let (oi, ni) = (
        o.init_containers.unwrap_or_default(),
        n.init_containers.unwrap_or_default(),
    );
    for (i, (a, b)) in oi.iter().zip(&ni).enumerate() {
        errors.extend(resource_errors(&path.index(i), a, b));
        let sidecar = a.restart_policy.as_deref() == Some("Always");
        if !sidecar && restarts(a) && a.resources != b.resources {
            let detail = "non-sidecar init containers with a resize policy of RestartContainer cannot be resized";
            errors.push(FieldError::forbidden(&path.index(i), detail));
        }
    }
    errors.dedup_by(|a, b| a == b);
    errors
}
