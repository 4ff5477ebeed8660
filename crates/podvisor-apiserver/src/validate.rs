//! Validation of the kinds beyond pods (pods have `podvisor_core::validation`): a
//! ReplicaSet as apps/v1 requires it, so that a bad one is refused at once instead of
//! making bad pods for ever.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use podvisor_core::labels::selects;
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath, validate_pod};

/// A ReplicaSet's spec: a non-empty selector that selects its own template, a template pod
/// that is valid and restarts `Always`, no negative counts.
pub fn replica_set(rs: &ReplicaSet) -> Result<(), FieldErrors> {
    let mut errors = FieldErrors(Vec::new());
    let spec_path = FieldPath::new("spec");
    let spec = &rs.spec;
    non_negative(
        &[
            ("replicas", spec.replicas),
            ("minReadySeconds", spec.min_ready_seconds),
        ],
        &mut errors,
    );
    let selector = &spec.selector;
    let empty = is_empty(selector);
    if empty {
        errors.push(FieldError::required(
            &spec_path.child("selector"),
            "empty selector is invalid for deployment",
        ));
    }
    match spec.template.as_ref() {
        None => errors.push(FieldError::required(&spec_path.child("template"), "")),
        Some(t) => {
            let name = rs.metadata.name.as_deref().unwrap_or("rs");
            let selector = (!empty).then_some(selector);
            template(name, t, selector, &["Always"], &mut errors);
        }
    }
    errors.into_result()
}

/// Whether a label selector selects nothing at all (refused: it would select every pod).
pub(crate) fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

/// Negative counts under `spec`.
pub(crate) fn non_negative(fields: &[(&str, Option<i32>)], errors: &mut FieldErrors) {
    for (field, value) in fields {
        if let Some(v) = value.filter(|v| *v < 0) {
            errors.push(FieldError::invalid_number(
                &FieldPath::new("spec").child(field),
                i64::from(v),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// A pod template (of the object `name`): selected by the selector, a valid pod, with one
/// of the `policies` (the first is the default).
pub(crate) fn template(
    name: &str,
    t: &PodTemplateSpec,
    selector: Option<&LabelSelector>,
    policies: &[&str],
    errors: &mut FieldErrors,
) {
    let path = FieldPath::new("spec").child("template");
    let labels = t
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if selector.is_some_and(|s| !selects(s, &labels)) {
        let at = path.child("metadata").child("labels");
        errors.push(FieldError::invalid(
            &at,
            "",
            "`selector` does not match template `labels`",
        ));
    }
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("{name}-xxxxx")),
            ..t.metadata.clone().unwrap_or_default()
        },
        spec: t.spec.clone(),
        status: None,
    };
    if let Err(e) = validate_pod(&pod) {
        for mut fe in e.0 {
            fe.field = format!("spec.template.{}", fe.field);
            errors.push(fe);
        }
    }
    let policy = t
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or(policies[0]);
    if !policies.contains(&policy) {
        let at = path.child("spec").child("restartPolicy");
        errors.push(FieldError::not_supported(&at, policy, policies));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(v: serde_json::Value) -> ReplicaSet {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_good_replica_set_passes_and_each_mistake_is_named() {
        let good = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}});
        assert!(replica_set(&rs(good.clone())).is_ok());
        let mut bad = good.clone();
        bad["spec"]["template"]["metadata"]["labels"]["app"] = "db".into();
        bad["spec"]["replicas"] = (-1).into();
        bad["spec"]["template"]["spec"]["restartPolicy"] = "Never".into();
        bad["spec"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name".into();
        let text = replica_set(&rs(bad)).unwrap_err().to_string();
        for expected in [
            "spec.replicas",
            "spec.template.metadata.labels",
            "spec.template.spec.restartPolicy",
            "spec.template.spec.containers[0].name",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let mut empty = good;
        empty["spec"]["selector"] = json!({});
        assert!(
            replica_set(&rs(empty))
                .unwrap_err()
                .to_string()
                .contains("spec.selector")
        );
    }
}
