//! Deployments: apps/v1 defaults (one replica, RollingUpdate with 25 % surge and 25 %
//! unavailable, ten revisions kept, a 600 s progress deadline) and validation.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podvisor_core::intstr::{percent, scaled};
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};

use crate::defaults;
use crate::validate::{is_empty, non_negative, template};

fn set<T>(field: &mut Option<T>, value: impl FnOnce() -> T) {
    if field.is_none() {
        *field = Some(value());
    }
}

pub(crate) fn default(d: &mut Deployment) {
    let spec = &mut d.spec;
    set(&mut spec.replicas, || 1);
    set(&mut spec.revision_history_limit, || 10);
    set(&mut spec.progress_deadline_seconds, || 600);
    let strategy = spec
        .strategy
        .get_or_insert_with(DeploymentStrategy::default);
    set(&mut strategy.type_, || "RollingUpdate".into());
    if strategy.type_.as_deref() == Some("RollingUpdate") {
        let r = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        set(&mut r.max_surge, || IntOrString::String("25%".into()));
        set(&mut r.max_unavailable, || IntOrString::String("25%".into()));
    }
    if let Some(pod) = spec.template.spec.as_mut() {
        defaults::template_spec(pod);
    }
}

/// An int-or-percent that must be non-negative (a percentage at most 100 % when `cap`).
fn check_int_or_percent(path: &FieldPath, v: &IntOrString, cap: bool, errors: &mut FieldErrors) {
    let shown = match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    let bad = match v {
        IntOrString::Int(n) => (*n < 0).then_some("must be greater than or equal to 0"),
        IntOrString::String(s) => match percent(s) {
            Err(_) => {
                Some("a valid percent string must be a numeric string followed by an ending '%'")
            }
            Ok(p) if p < 0 => Some("must be greater than or equal to 0"),
            Ok(p) if cap && p > 100 => Some("must not be greater than 100%"),
            Ok(_) => None,
        },
    };
    if let Some(why) = bad {
        errors.push(FieldError::invalid(path, &shown, why));
    }
}

fn strategy(s: &DeploymentStrategy, errors: &mut FieldErrors) {
    let path = FieldPath::new("spec").child("strategy");
    let kind = s.type_.as_deref().unwrap_or("RollingUpdate");
    match (kind, s.rolling_update.as_ref()) {
        ("Recreate", Some(_)) => errors.push(FieldError::forbidden(
            &path.child("rollingUpdate"),
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        ("Recreate", None) | ("RollingUpdate", None) => {}
        ("RollingUpdate", Some(r)) => {
            let r_path = path.child("rollingUpdate");
            let zero = IntOrString::Int(0);
            let surge = r.max_surge.as_ref().unwrap_or(&zero);
            let unavailable = r.max_unavailable.as_ref().unwrap_or(&zero);
            check_int_or_percent(&r_path.child("maxSurge"), surge, false, errors);
            check_int_or_percent(&r_path.child("maxUnavailable"), unavailable, true, errors);
            let is_zero = |v: &IntOrString| scaled(v, 100, true) == Ok(0);
            if is_zero(surge) && is_zero(unavailable) {
                errors.push(FieldError::invalid(
                    &r_path.child("maxUnavailable"),
                    "0",
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        (other, _) => errors.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["Recreate", "RollingUpdate"],
        )),
    }
}

fn validate(d: &Deployment) -> Result<(), FieldErrors> {
    let mut errors = FieldErrors(Vec::new());
    let path = FieldPath::new("spec");
    let spec = &d.spec;
    non_negative(
        &[
            ("replicas", spec.replicas),
            ("minReadySeconds", spec.min_ready_seconds),
            ("revisionHistoryLimit", spec.revision_history_limit),
            ("progressDeadlineSeconds", spec.progress_deadline_seconds),
        ],
        &mut errors,
    );
    if let Some(deadline) = spec.progress_deadline_seconds
        && deadline <= spec.min_ready_seconds.unwrap_or(0)
    {
        errors.push(FieldError::invalid_number(
            &path.child("progressDeadlineSeconds"),
            i64::from(deadline),
            "must be greater than minReadySeconds",
        ));
    }
    let empty = is_empty(&spec.selector);
    if empty {
        errors.push(FieldError::required(
            &path.child("selector"),
            "empty selector is invalid for deployment",
        ));
    }
    let name = d.metadata.name.as_deref().unwrap_or("deployment");
    let selector = (!empty).then_some(&spec.selector);
    template(name, &spec.template, selector, &["Always"], &mut errors);
    if let Some(s) = spec.strategy.as_ref() {
        strategy(s, &mut errors);
    }
    errors.into_result()
}

/// Defaults and validates `d`; what an update of `old` may not change (the selector).
pub(crate) fn admit(
    d: &mut Deployment,
    old: Option<&Deployment>,
) -> Result<Vec<FieldError>, FieldErrors> {
    default(d);
    validate(d)?;
    let mut errors = Vec::new();
    if let Some(old) = old {
        let selector = |d: &Deployment| d.spec.selector.clone();
        super::immutable("selector", &selector(old), &selector(d), &mut errors);
    }
    Ok(errors)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(v: serde_json::Value) -> Deployment {
        serde_json::from_value(v).unwrap()
    }

    fn good() -> serde_json::Value {
        json!({"metadata": {"name": "web"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}})
    }

    #[test]
    fn defaults_are_kube_apiservers() {
        let mut d = deployment(good());
        assert!(admit(&mut d, None).unwrap().is_empty());
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["spec"]["replicas"], 1);
        assert_eq!(v["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(v["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(
            v["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
        );
        assert_eq!(v["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn a_template_is_stored_as_a_go_client_writes_it_back() {
        let mut v = good();
        v["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] =
            json!({"exec": {"command": ["true"]}, "initialDelaySeconds": 0});
        v["spec"]["template"]["spec"]["containers"][0]["stdin"] = false.into();
        v["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0.into();
        let mut d = deployment(v);
        admit(&mut d, None).unwrap();
        let t = serde_json::to_value(&d.spec.template).unwrap();
        let c = &t["spec"]["containers"][0];
        assert!(c["readinessProbe"]["initialDelaySeconds"].is_null(), "{c}");
        assert!(c["stdin"].is_null(), "{c}");
        assert_eq!(
            t["spec"]["terminationGracePeriodSeconds"], 0,
            "a pointer keeps its zero"
        );
    }

    #[test]
    fn each_mistake_is_named() {
        let mut bad = good();
        bad["spec"]["strategy"] = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}});
        bad["spec"]["template"]["metadata"]["labels"]["app"] = "db".into();
        bad["spec"]["minReadySeconds"] = 700.into();
        let text = admit(&mut deployment(bad), None).unwrap_err().to_string();
        for expected in [
            "may not be 0 when `maxSurge` is 0",
            "spec.template.metadata.labels",
            "must be greater than minReadySeconds",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let mut recreate = good();
        recreate["spec"]["strategy"] =
            json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
        let text = admit(&mut deployment(recreate), None)
            .unwrap_err()
            .to_string();
        assert!(text.contains("spec.strategy.rollingUpdate"), "{text}");
        let mut over = good();
        over["spec"]["strategy"] =
            json!({"rollingUpdate": {"maxUnavailable": "150%", "maxSurge": "x"}});
        let text = admit(&mut deployment(over), None).unwrap_err().to_string();
        assert!(text.contains("must not be greater than 100%"), "{text}");
        assert!(
            text.contains("numeric string followed by an ending '%'"),
            "{text}"
        );
    }

    #[test]
    fn the_selector_may_not_change() {
        let old = deployment(good());
        let mut new = good();
        new["spec"]["selector"]["matchLabels"]["tier"] = "x".into();
        new["spec"]["template"]["metadata"]["labels"]["tier"] = "x".into();
        let errors = admit(&mut deployment(new), Some(&old)).unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.selector");
    }
}
