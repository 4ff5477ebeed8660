use k8s_openapi::api::core::v1::Pod;

use super::*;

fn pod(yaml: &str) -> Pod {
    serde_json::from_value(serde_json::from_str(yaml).unwrap()).unwrap()
}

#[test]
fn every_problem_is_reported_with_its_field_path() {
    let p = pod(r#"{
        "metadata": {"name": "Web_Server"},
        "spec": {
            "restartPolicy": "Sometimes",
            "volumes": [{"name": "d", "configMap": {"name": "x"}}],
            "initContainers": [{"name": "app", "image": "i"}],
            "containers": [{
                "name": "app",
                "ports": [{"containerPort": 70000}],
                "resources": {"requests": {"cpu": "lots"}},
                "volumeMounts": [{"name": "nope", "mountPath": "rel", "subPath": "../x"}],
                "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]
            }]
        }
    }"#);
    let errs = validate_pod(&p).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.restartPolicy",
            "spec.volumes[0]",
            "spec.containers[0].image",
            "spec.containers[0].ports[0].containerPort",
            "spec.containers[0].resources.requests[cpu]",
            "spec.containers[0].volumeMounts[0].name",
            "spec.containers[0].volumeMounts[0].mountPath",
            "spec.containers[0].volumeMounts[0].subPath",
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
            "spec.containers[0].name",
        ]
    );
    let kinds: Vec<&str> = errs.0.iter().map(|e| e.kind.reason()).collect();
    assert_eq!(kinds[2], "FieldValueForbidden");
    assert_eq!(kinds[10], "FieldValueDuplicate");
    assert!(
        errs.to_string()
            .contains("volumeMounts[0].name: Not found: \"nope\""),
        "{errs}"
    );
}

#[test]
fn a_valid_pod_passes_and_a_missing_spec_is_required() {
    let ok = pod(r#"{"metadata": {"name": "web", "namespace": "apps"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}],
                 "terminationGracePeriodSeconds": 0}}"#);
    assert_eq!(validate_pod(&ok), Ok(()));
    let none = pod(r#"{"metadata": {"name": "web"}}"#);
    assert_eq!(
        validate_pod(&none).unwrap_err().to_string(),
        "spec: Required value"
    );
    let grace = pod(r#"{"metadata": {"name": "web"},
        "spec": {"containers": [{"name": "app", "image": "b"}],
                 "terminationGracePeriodSeconds": 9223372036854775807}}"#);
    let e = validate_pod(&grace).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("spec.terminationGracePeriodSeconds: Invalid value"),
        "{e}"
    );
}
