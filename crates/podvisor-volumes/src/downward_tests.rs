use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn pod() -> Pod {
    let limits = BTreeMap::from([
        ("cpu".to_string(), Quantity("250m".into())),
        ("memory".to_string(), Quantity("64Mi".into())),
    ]);
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            uid: Some("u-1".into()),
            labels: Some(BTreeMap::from([
                ("tier".into(), "front".into()),
                ("app".into(), "web".into()),
            ])),
            annotations: Some(BTreeMap::from([("note".into(), "two\nlines".into())])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![
                Container {
                    name: "main".into(),
                    resources: Some(ResourceRequirements {
                        limits: Some(limits),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                Container {
                    name: "bare".into(),
                    ..Default::default()
                },
            ],
            service_account_name: Some("robot".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn facts(pod: &Pod) -> PodFacts<'_> {
    PodFacts {
        pod,
        node_name: "n1",
        pod_ip: Some("10.0.0.7"),
        host_ip: Some("192.0.2.1"),
        allocatable: Allocatable {
            pods: 110,
            cpu_milli: 2000,
            memory_bytes: 4 << 30,
        },
    }
}

#[test]
fn labels_and_annotations_as_sorted_quoted_lines() {
    let p = pod();
    let f = facts(&p);
    assert_eq!(
        field_value(&f, "metadata.labels", For::File).unwrap(),
        "app=\"web\"\ntier=\"front\""
    );
    assert_eq!(
        field_value(&f, "metadata.annotations", For::File).unwrap(),
        "note=\"two\\nlines\""
    );
    assert_eq!(
        field_value(&f, "metadata.labels['tier']", For::Env).unwrap(),
        "front"
    );
    assert_eq!(
        field_value(&f, "metadata.labels['absent']", For::File).unwrap(),
        ""
    );
}

#[test]
fn each_path_only_where_the_api_allows_it() {
    let p = pod();
    let f = facts(&p);
    assert_eq!(
        field_value(&f, "status.podIP", For::Env).unwrap(),
        "10.0.0.7"
    );
    assert_eq!(
        field_value(&f, "status.hostIP", For::Env).unwrap(),
        "192.0.2.1"
    );
    assert_eq!(
        field_value(&f, "spec.serviceAccountName", For::Env).unwrap(),
        "robot"
    );
    assert!(field_value(&f, "status.podIP", For::File).is_err());
    assert!(field_value(&f, "metadata.labels", For::Env).is_err());
    assert!(field_value(&f, "spec.bogus", For::Env).is_err());
    assert!(field_value(&f, "metadata.finalizers['x']", For::Env).is_err());
}

fn sel(resource: &str, divisor: Option<&str>, container: Option<&str>) -> ResourceFieldSelector {
    ResourceFieldSelector {
        resource: resource.into(),
        divisor: divisor.map(|d| Quantity(d.into())),
        container_name: container.map(Into::into),
    }
}

#[test]
fn resources_round_up_by_the_divisor() {
    let p = pod();
    let f = facts(&p);
    let v = |s| resource_value(&f, &s, Some("main")).unwrap();
    assert_eq!(v(sel("limits.cpu", None, None)), "1");
    assert_eq!(v(sel("limits.cpu", Some("1m"), None)), "250");
    assert_eq!(v(sel("limits.memory", Some("1Mi"), None)), "64");
    assert_eq!(v(sel("requests.cpu", None, None)), "0");
    // As kube-apiserver serves an unset divisor: "0", taken as 1.
    assert_eq!(v(sel("limits.cpu", Some("0"), None)), "1");
    assert_eq!(
        v(sel("limits.memory", Some("0"), None)),
        (64 << 20).to_string()
    );
}

#[test]
fn an_unset_limit_is_the_nodes_allocatable() {
    let p = pod();
    let f = facts(&p);
    let v = |s| resource_value(&f, &s, None).unwrap();
    assert_eq!(v(sel("limits.cpu", Some("1m"), Some("bare"))), "2000");
    assert_eq!(v(sel("limits.memory", Some("1Gi"), Some("bare"))), "4");
    assert!(resource_value(&f, &sel("limits.cpu", None, Some("ghost")), None).is_err());
    assert!(
        resource_value(
            &f,
            &sel("limits.ephemeral-storage", None, Some("main")),
            None
        )
        .is_err()
    );
}

#[test]
fn every_path_validation_lets_through_is_answered() {
    use podvisor_core::validation::{ENV_FIELD_PATHS, FILE_FIELD_PATHS, RESOURCES};
    let p = pod();
    let f = facts(&p);
    for path in ENV_FIELD_PATHS {
        assert!(field_value(&f, path, For::Env).is_ok(), "{path}");
    }
    for path in FILE_FIELD_PATHS {
        assert!(field_value(&f, path, For::File).is_ok(), "{path}");
    }
    for r in RESOURCES {
        assert!(
            resource_value(&f, &sel(r, None, Some("main")), None).is_ok(),
            "{r}"
        );
    }
}
