//! What the ReplicaSet controller asks of pods and selectors, as plain functions: which
//! pods count (active, ready, available), who controls a pod, whether a selector matches,
//! and the pod a template makes.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use podvisor_core::{Phase, PodExt};

use crate::owners::controller_ref;

/// Not finished and not being deleted: what counts toward the replicas.
pub fn is_active(p: &Pod) -> bool {
    !p.is_terminal() && !p.is_deleted()
}

fn ready_condition(p: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

pub fn is_ready(p: &Pod) -> bool {
    ready_condition(p).is_some_and(|c| c.status == "True")
}

/// When the pod last became ready.
pub fn ready_since(p: &Pod) -> Option<&Time> {
    ready_condition(p)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
}

/// Ready for longer than `min_ready_seconds` at `now_ms` (strictly, as Kubernetes).
pub fn is_available(p: &Pod, min_ready_seconds: i32, now_ms: i64) -> bool {
    if !is_ready(p) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    ready_since(p)
        .is_some_and(|t| t.0.as_millisecond() + i64::from(min_ready_seconds) * 1000 < now_ms)
}

/// The owner reference with `controller: true`.
pub fn controller_of(p: &Pod) -> Option<&OwnerReference> {
    p.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

pub fn labels(p: &Pod) -> BTreeMap<String, String> {
    p.metadata.labels.clone().unwrap_or_default()
}

pub use podvisor_core::labels::{selector_string, selects};

/// The pod the ReplicaSet's template makes: `generateName` `<rs>-`, the template's labels,
/// annotations, finalizers and spec, owned by the ReplicaSet.
pub fn from_template(rs: &ReplicaSet) -> Pod {
    let template = rs.spec.template.clone().unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let mut pod = Pod {
        spec: template.spec,
        ..Pod::default()
    };
    pod.metadata = ObjectMeta {
        generate_name: Some(format!("{name}-")),
        namespace: rs.metadata.namespace.clone(),
        labels: meta.labels,
        annotations: meta.annotations,
        finalizers: meta.finalizers,
        owner_references: Some(vec![controller_ref(rs)]),
        ..ObjectMeta::default()
    };
    pod
}

/// The phase's place in the deletion order (Pending, then Unknown, then Running).
pub fn phase_rank(p: &Pod) -> u8 {
    match p.phase() {
        Some(Phase::Unknown) => 1,
        Some(Phase::Running) => 2,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_template_makes_an_owned_pod_with_a_generated_name() {
        let rs: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "team", "uid": "rs-1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}},
                             "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}))
        .unwrap();
        let pod = serde_json::to_value(from_template(&rs)).unwrap();
        let m = &pod["metadata"];
        assert_eq!(m["generateName"], "web-");
        assert_eq!(m["namespace"], "team");
        assert_eq!(m["labels"]["app"], "web");
        assert_eq!(m["annotations"]["a"], "1");
        assert_eq!(m["ownerReferences"][0]["uid"], "rs-1");
        assert_eq!(m["ownerReferences"][0]["controller"], true);
        assert_eq!(m["ownerReferences"][0]["blockOwnerDeletion"], true);
        assert_eq!(pod["spec"]["containers"][0]["image"], "x:1");
        assert!(
            pod["spec"].get("nodeName").is_none(),
            "the API binds it to this node"
        );
    }

    #[test]
    fn availability_waits_min_ready_seconds_strictly() {
        let p: Pod = serde_json::from_value(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
        .unwrap();
        let t: k8s_openapi::jiff::Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let at10 = t.as_millisecond();
        assert!(is_available(&p, 0, at10));
        assert!(!is_available(&p, 10, at10), "strictly after");
        assert!(is_available(&p, 10, at10 + 1));
        assert!(!is_available(&Pod::default(), 0, at10));
    }
}
