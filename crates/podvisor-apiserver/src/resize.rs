//! `pods/resize`: the CPU and memory of a running pod's containers changed in place, as
//! kube-apiserver's `ValidatePodResize` admits it. The store takes only the containers'
//! resources and resize policies from such an update (and refuses one that renames,
//! adds or removes containers); this refuses the rest: a static pod's mirror, a pod whose
//! runtime reports no resources, another QoS class, requests or limits removed, anything
//! but CPU and memory changed, a changed resize policy, and a non-sidecar init container
//! restarted by its policy.

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

/// Whether the node reports what the pod's first running container runs with (a runtime
/// that cannot say cannot resize in place), as kube-apiserver's
/// `isPodResizeRequestSupported`; with nothing running it cannot tell, and allows it.
fn supported(pod: &Pod) -> bool {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    let first_running = statuses
        .into_iter()
        .flatten()
        .find(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
    first_running.is_none_or(|c| c.resources.is_some())
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
    if !supported(old) {
        let detail = "Pod running on node without support for resize";
        errors.push(FieldError::forbidden(&FieldPath::new("spec"), detail));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(running_reports: Option<bool>) -> Pod {
        let mut status = serde_json::json!({"name": "c", "image": "i", "imageID": "",
            "ready": true, "restartCount": 0, "state": {"running": {}}});
        if running_reports == Some(true) {
            status["resources"] = serde_json::json!({});
        }
        let statuses = match running_reports {
            None => serde_json::json!([]),
            Some(_) => serde_json::json!([status]),
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}]},
            "status": {"containerStatuses": statuses},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_whose_running_container_reports_no_resources_is_not_resized() {
        let why = |p: &Pod| {
            update_errors(p, p)
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        };
        assert!(why(&pod(Some(true))).is_empty());
        assert!(why(&pod(None)).is_empty(), "nothing running: allowed");
        let refused = why(&pod(Some(false)));
        assert!(
            refused
                .iter()
                .any(|e| e.contains("without support for resize")),
            "{refused:?}"
        );
    }
}
