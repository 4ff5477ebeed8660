use serde_json::{Value, json};

use super::*;

fn cfg(replicas: i64, labels: Value, containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": containers}}}})
}

fn run(live: Option<&Value>, config: &Value, manager: &str, force: bool) -> Result<Value, Error> {
    let a = Apply {
        config,
        manager,
        force,
        now: json!("2026-11-27T00:00:00Z"),
    };
    apply(live, &a, "deployments.apps", "web")
}

fn managers(v: &Value) -> Vec<String> {
    let all = v["metadata"]["managedFields"].as_array().unwrap();
    all.iter()
        .map(|e| e["manager"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_first_apply_owns_what_it_set_in_fields_v1() {
    let c = cfg(
        2,
        json!({"app": "web"}),
        json!([{"name": "main", "image": "x:1"}]),
    );
    let v = run(None, &c, "kubectl", false).unwrap();
    let e = &v["metadata"]["managedFields"][0];
    assert_eq!(
        (e["manager"].as_str(), e["operation"].as_str()),
        (Some("kubectl"), Some("Apply"))
    );
    assert_eq!(
        e["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"main\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    );
    assert_eq!(
        fields::from_v1(&e["fieldsV1"]).unwrap(),
        fields::of(&c).unwrap(),
        "read back as written"
    );
}

#[test]
fn what_a_manager_stops_setting_goes_unless_another_owns_it() {
    let first = cfg(
        2,
        json!({"app": "web", "tier": "a"}),
        json!([{"name": "main", "image": "x:1"}, {"name": "side", "image": "y"}]),
    );
    let v = run(None, &first, "kubectl", false).unwrap();
    let second = cfg(
        2,
        json!({"app": "web"}),
        json!([{"name": "main", "image": "x:1"}]),
    );
    let v2 = run(Some(&v), &second, "kubectl", false).unwrap();
    assert!(
        v2["metadata"]["labels"]["tier"].is_null(),
        "{}",
        v2["metadata"]
    );
    assert_eq!(
        v2["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Another manager that also set `tier` keeps it when the first drops it.
    let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"tier": "a"}}});
    let shared = run(Some(&v), &other, "ops", false).unwrap();
    let v3 = run(Some(&shared), &second, "kubectl", false).unwrap();
    assert_eq!(v3["metadata"]["labels"]["tier"], "a");
    assert_eq!(managers(&v3), ["kubectl", "ops"]);
}

#[test]
fn another_managers_field_is_a_conflict_unless_forced() {
    let c = cfg(
        2,
        json!({"app": "web"}),
        json!([{"name": "main", "image": "x:1"}]),
    );
    let v = run(None, &c, "kubectl", false).unwrap();
    let theirs = cfg(
        5,
        json!({"app": "web"}),
        json!([{"name": "main", "image": "x:2"}]),
    );
    let e = run(Some(&v), &theirs, "other", false).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("Apply failed with 2 conflicts"), "{text}");
    assert!(
        text.contains("conflict with \"kubectl\" using apps/v1: .spec.replicas"),
        "{text}"
    );
    assert!(
        text.contains(".spec.template.spec.containers[name=\"main\"].image"),
        "{text}"
    );
    // The same value is no conflict: both own it.
    assert!(run(Some(&v), &c, "other", false).is_ok());
    let forced = run(Some(&v), &theirs, "other", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    let mine = fields::from_v1(&forced["metadata"]["managedFields"][0]["fieldsV1"]).unwrap();
    assert!(
        !mine.contains(&vec![
            Step::Field("spec".into()),
            Step::Field("replicas".into())
        ]),
        "moved away from kubectl"
    );
}

#[test]
fn an_update_that_is_not_an_apply_takes_the_fields_it_changes() {
    let c = cfg(
        2,
        json!({"app": "web"}),
        json!([{"name": "main", "image": "x:1"}]),
    );
    let v = run(None, &c, "kubectl", false).unwrap();
    let mut scaled = v.clone();
    scaled["spec"]["replicas"] = 5.into();
    assert!(take_changed(&v, &mut scaled, "kubectl-scale", json!("t")).unwrap());
    // kubectl applies again without replicas: it no longer owns them, so they stay 5.
    let without = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x:1"}]}}}});
    let v2 = run(Some(&scaled), &without, "kubectl", false).unwrap();
    assert_eq!(v2["spec"]["replicas"], 5);
    assert_eq!(managers(&v2), ["kubectl", "kubectl-scale"]);
}

#[test]
fn hostile_configurations_are_refused_not_merged() {
    let d = |extra: Value| {
        let mut v = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    for bad in [
        json!(5),
        json!([1]),
        d(json!({"metadata": "x"})),
        json!({"apiVersion": "v1", "kind": "Pod"}),
        d(json!({"spec": {"$patch": "replace"}})),
        d(json!({"metadata": {"name": "other"}})),
    ] {
        assert!(
            check(&bad, "apps/v1", "Deployment", "web").is_err(),
            "{bad}"
        );
    }
    // Deeply nested long keys: refused within the budget, not expanded.
    let key = "k".repeat(4096);
    let mut deep = json!("leaf");
    for _ in 0..100 {
        deep = json!({ key.clone(): deep });
    }
    let mut wide = serde_json::Map::new();
    for i in 0..50 {
        wide.insert(format!("x{i}"), deep.clone());
    }
    assert!(fields::of(&d(json!({"spec": wide}))).is_err());
}
