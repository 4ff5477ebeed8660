use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapEnvSource, ConfigMapKeySelector, EnvVarSource, ObjectFieldSelector, Pod,
    PodSpec, Secret, SecretEnvSource, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::testing::FakeObjects;

fn objects() -> FakeObjects {
    let cm = ConfigMap {
        data: Some(BTreeMap::from([
            ("MODE".into(), "fast".into()),
            ("HOST".into(), "db".into()),
            ("bad key".into(), "x".into()),
        ])),
        binary_data: Some(BTreeMap::from([("BIN".into(), ByteString(vec![1]))])),
        ..Default::default()
    };
    let s = Secret {
        data: Some(BTreeMap::from([(
            "PASSWORD".into(),
            ByteString(b"hunter2".to_vec()),
        )])),
        ..Default::default()
    };
    let mut o = FakeObjects::default();
    o.config_maps
        .insert(("shop".into(), "settings".into()), Arc::new(cm));
    o.secrets
        .insert(("shop".into(), "creds".into()), Arc::new(s));
    o
}

fn pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    }
}

fn facts(p: &Pod) -> PodFacts<'_> {
    PodFacts {
        pod: p,
        node_name: "n1",
        pod_ip: Some("10.1.2.3"),
        host_ip: None,
        allocatable: crate::testing::ALLOCATABLE,
    }
}

fn val(name: &str, v: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(v.into()),
        ..Default::default()
    }
}

fn from(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(source),
        ..Default::default()
    }
}

fn cm_key(name: &str, key: &str, optional: Option<bool>) -> EnvVarSource {
    EnvVarSource {
        config_map_key_ref: Some(ConfigMapKeySelector {
            name: name.into(),
            key: key.into(),
            optional,
        }),
        ..Default::default()
    }
}

async fn env_of(c: Container) -> Result<Environment, VolumeError> {
    let p = pod();
    container_env(&objects(), &facts(&p), &c).await
}

#[tokio::test]
async fn env_from_then_env_in_order_with_prefix_and_overrides() {
    let c = Container {
        name: "main".into(),
        env_from: Some(vec![
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "settings".into(),
                    optional: None,
                }),
                prefix: Some("APP_".into()),
                ..Default::default()
            },
            EnvFromSource {
                secret_ref: Some(SecretEnvSource {
                    name: "creds".into(),
                    optional: None,
                }),
                ..Default::default()
            },
        ]),
        env: Some(vec![
            val("APP_MODE", "slow"),
            val("URL", "$(APP_HOST):5432/$(UNKNOWN)/$$(APP_HOST)"),
            from(
                "IP",
                EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: "status.podIP".into(),
                        api_version: None,
                    }),
                    ..Default::default()
                },
            ),
        ]),
        ..Default::default()
    };
    let env = env_of(c).await.unwrap();
    let names: Vec<&str> = env.vars.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["APP_HOST", "APP_MODE", "PASSWORD", "URL", "IP"]);
    assert_eq!(env.get("APP_MODE"), Some("slow"));
    assert_eq!(env.get("PASSWORD"), Some("hunter2"));
    assert_eq!(env.get("URL"), Some("db:5432/$(UNKNOWN)/$(APP_HOST)"));
    assert_eq!(env.get("IP"), Some("10.1.2.3"));
    assert_eq!(env.skipped, ["APP_bad key"]);
}

#[tokio::test]
async fn key_refs_resolve_and_optional_ones_may_be_missing() {
    let c = Container {
        name: "main".into(),
        env: Some(vec![
            from("MODE", cm_key("settings", "MODE", None)),
            from("NONE", cm_key("settings", "NOPE", Some(true))),
            from("GONE", cm_key("ghost", "X", Some(true))),
            from(
                "PW",
                EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: "creds".into(),
                        key: "PASSWORD".into(),
                        optional: None,
                    }),
                    ..Default::default()
                },
            ),
        ]),
        ..Default::default()
    };
    let env = env_of(c).await.unwrap();
    assert_eq!(env.get("MODE"), Some("fast"));
    assert_eq!(env.get("PW"), Some("hunter2"));
    assert_eq!(env.get("NONE"), None);
    assert_eq!(env.get("GONE"), None);
}

#[tokio::test]
async fn a_required_key_or_object_that_is_missing_fails_with_its_name() {
    let missing_key = Container {
        env: Some(vec![from("X", cm_key("settings", "NOPE", None))]),
        ..Default::default()
    };
    let e = env_of(missing_key).await.unwrap_err();
    assert_eq!(e.to_string(), "configmap shop/settings has no key \"NOPE\"");
    let missing_object = Container {
        env_from: Some(vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "ghost".into(),
                optional: None,
            }),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let e = env_of(missing_object).await.unwrap_err();
    assert_eq!(e.to_string(), "secret shop/ghost not found");
    // binaryData is not for the environment.
    let binary = Container {
        env: Some(vec![from("B", cm_key("settings", "BIN", None))]),
        ..Default::default()
    };
    assert!(env_of(binary).await.is_err());
}

#[tokio::test]
async fn an_unreachable_api_is_not_a_missing_object() {
    let mut o = objects();
    o.away = true;
    let c = Container {
        env: Some(vec![from("X", cm_key("settings", "MODE", Some(true)))]),
        ..Default::default()
    };
    let p = pod();
    let e = container_env(&o, &facts(&p), &c).await.unwrap_err();
    assert!(matches!(e, VolumeError::Source { .. }), "{e}");
}

#[test]
fn variable_names() {
    for ok in ["A", "_a.b-c", "x1", ".hidden", "-dash"] {
        assert!(is_env_name(ok), "{ok}");
    }
    for bad in ["", "1A", "a b", "a=b", "é"] {
        assert!(!is_env_name(bad), "{bad}");
    }
}

#[tokio::test]
async fn the_services_come_first_and_anything_defined_replaces_them() {
    let mut o = objects();
    o.services = vec![Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kubernetes"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}
        }))
        .unwrap(),
    )];
    let c = Container {
        env: Some(vec![
            val("KUBERNETES_SERVICE_PORT", "8443"),
            val(
                "API",
                "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
            ),
        ]),
        ..Default::default()
    };
    let p = pod();
    let env = container_env(&o, &facts(&p), &c).await.unwrap();
    assert_eq!(env.get("KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
    assert_eq!(env.get("KUBERNETES_SERVICE_PORT"), Some("8443"));
    assert_eq!(env.get("API"), Some("10.96.0.1:8443"));
}

#[tokio::test]
async fn a_cluster_out_of_reach_leaves_out_the_services_and_says_so() {
    let mut o = objects();
    o.away = true;
    let c = Container {
        env: Some(vec![val("A", "1")]),
        ..Default::default()
    };
    let p = pod();
    let env = container_env(&o, &facts(&p), &c).await.unwrap();
    assert_eq!(env.get("A"), Some("1"));
    assert!(env.services_unavailable.is_some());
}

/// A bomb: 1 KiB, then each variable eight copies of the one before. Six levels would be
/// 256 MiB in the agent; it stops at the third (512 KiB), past the kernel's limit on one
/// string, having held no more than that limit.
#[tokio::test]
async fn an_expansion_bomb_stops_at_the_kernel_s_limit_on_one_string() {
    let mut env = vec![val("L0", &"x".repeat(1024))];
    for level in 1..=6 {
        env.push(val(
            &format!("L{level}"),
            &format!("$(L{})", level - 1).repeat(8),
        ));
    }
    let c = Container {
        name: "main".into(),
        env: Some(env),
        ..Default::default()
    };
    let e = env_of(c).await.unwrap_err();
    assert!(
        matches!(&e, VolumeError::TooLong { what, source: TooLong::String } if what == "env L3"),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("env L3: expands to more than"),
        "{e}"
    );
}

/// Many variables, each within the limit, past what a process can be given together.
#[tokio::test]
async fn an_environment_past_the_kernel_s_total_is_refused() {
    let big = "y".repeat(100 * 1024);
    let env = (0..80).map(|i| val(&format!("V{i}"), &big)).collect();
    let c = Container {
        name: "main".into(),
        env: Some(env),
        ..Default::default()
    };
    let e = env_of(c).await.unwrap_err();
    assert!(
        matches!(
            &e,
            VolumeError::TooLong {
                source: TooLong::Total,
                ..
            }
        ),
        "{e}"
    );
}
