use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, DownwardAPIProjection, ObjectFieldSelector, Pod, PodSpec,
    ProjectedVolumeSource, Secret, SecretVolumeSource, ServiceAccountTokenProjection,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::testing::FakeObjects;

fn objects() -> FakeObjects {
    let cm = ConfigMap {
        data: Some(BTreeMap::from([("ca.crt".into(), "CERT".into())])),
        ..Default::default()
    };
    let s = Secret {
        data: Some(BTreeMap::from([("key".into(), ByteString(b"k".to_vec()))])),
        ..Default::default()
    };
    let mut o = FakeObjects {
        token: Some("jwt".into()),
        ..Default::default()
    };
    o.config_maps
        .insert(("ns".into(), "kube-root-ca.crt".into()), Arc::new(cm));
    o.secrets.insert(("ns".into(), "tls".into()), Arc::new(s));
    o
}

fn pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            service_account_name: Some("robot".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn facts(p: &Pod) -> PodFacts<'_> {
    PodFacts {
        pod: p,
        node_name: "n",
        pod_ip: None,
        host_ip: None,
        allocatable: crate::testing::ALLOCATABLE,
    }
}

fn namespace_file() -> DownwardAPIVolumeFile {
    DownwardAPIVolumeFile {
        path: "namespace".into(),
        field_ref: Some(ObjectFieldSelector {
            field_path: "metadata.namespace".into(),
            api_version: Some("v1".into()),
        }),
        ..Default::default()
    }
}

/// The volume the ServiceAccount admission plugin adds to a pod.
fn api_access() -> Volume {
    Volume {
        name: "kube-api-access-x".into(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o644),
            default_user: None,
            sources: Some(vec![
                VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        path: "token".into(),
                        expiration_seconds: Some(3607),
                        audience: None,
                        user: None,
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "kube-root-ca.crt".into(),
                        items: Some(vec![k8s_openapi::api::core::v1::KeyToPath {
                            key: "ca.crt".into(),
                            path: "ca.crt".into(),
                            mode: None,
                            user: None,
                        }]),
                        optional: None,
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![namespace_file()]),
                    }),
                    ..Default::default()
                },
            ]),
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_service_account_volume_holds_token_ca_and_namespace() {
    let o = objects();
    let p = pod();
    let payload = payload(&o, &facts(&p), &api_access())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        payload.keys().collect::<Vec<_>>(),
        ["ca.crt", "namespace", "token"]
    );
    assert_eq!(payload["token"].data, b"jwt");
    assert_eq!(payload["ca.crt"].data, b"CERT");
    assert_eq!(payload["namespace"].data, b"ns");
    let asked = o.token_requests.lock().unwrap().clone();
    assert_eq!(
        asked,
        [TokenSpec {
            namespace: "ns".into(),
            service_account: "robot".into(),
            pod_name: "p".into(),
            pod_uid: "uid-1".into(),
            audience: None,
            expiration_seconds: 3607,
        }]
    );
    assert!(in_memory(&api_access()));
}

#[tokio::test]
async fn a_missing_object_fails_unless_the_volume_is_optional() {
    let o = objects();
    let p = pod();
    let mut v = Volume {
        name: "conf".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: "ghost".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = payload(&o, &facts(&p), &v).await.unwrap_err();
    assert_eq!(e.to_string(), "configmap ns/ghost not found");
    v.config_map.as_mut().unwrap().optional = Some(true);
    let empty = payload(&o, &facts(&p), &v).await.unwrap().unwrap();
    assert!(empty.is_empty());
    assert!(!in_memory(&v));
}

#[tokio::test]
async fn a_secret_volume_with_its_default_mode() {
    let o = objects();
    let p = pod();
    let v = Volume {
        name: "tls".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("tls".into()),
            default_mode: Some(0o400),
            ..Default::default()
        }),
        ..Default::default()
    };
    let payload = payload(&o, &facts(&p), &v).await.unwrap().unwrap();
    assert_eq!(payload["key"].data, b"k");
    assert_eq!(payload["key"].mode, 0o400);
    assert!(in_memory(&v));
    let dir = volume_dir(Path::new("/pods/u/volumes"), &v).unwrap();
    assert_eq!(dir, Path::new("/pods/u/volumes/kubernetes.io~secret/tls"));
}

#[tokio::test]
async fn without_tokens_the_projection_fails_with_why() {
    let mut o = objects();
    o.token = None;
    let p = pod();
    let e = payload(&o, &facts(&p), &api_access()).await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("service-account token for \"robot\""),
        "{e}"
    );
}

#[tokio::test]
async fn other_volumes_are_not_filled_from_objects() {
    let o = objects();
    let p = pod();
    let v = Volume {
        name: "scratch".into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    };
    assert!(payload(&o, &facts(&p), &v).await.unwrap().is_none());
    assert!(volume_dir(Path::new("/x"), &v).is_none());
}
