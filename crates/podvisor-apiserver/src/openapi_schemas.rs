//! The schemas of the served kinds, from k8s-openapi's (the Kubernetes OpenAPI definitions
//! it is generated from, descriptions included), through schemars: every definition a kind
//! reaches, named as Kubernetes names them (`io.k8s.api.apps.v1.Deployment`), `$ref`
//! siblings moved into `allOf` as kube-apiserver writes them, and each served kind tagged
//! with `x-kubernetes-group-version-kind`, which `kubectl explain` and client-side
//! validation look for. Built on the first request for a document, then kept as bytes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::Bytes;
use k8s_openapi::api::{apps, authentication, batch, core, rbac};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// A served kind: its group, its kind, and how to ask the generator for its schema.
struct KindSchema {
    group: &'static str,
    kind: &'static str,
    add: fn(&mut SchemaGenerator),
}

macro_rules! kinds {
    ($($group:expr, $kind:literal => $ty:ty;)*) => {
        &[$(KindSchema {
            group: $group,
            kind: $kind,
            add: |g| drop(g.subschema_for::<$ty>()),
        }),*]
    };
}

const KINDS: &[KindSchema] = kinds! {
    "", "Pod" => core::v1::Pod;
    "", "Node" => core::v1::Node;
    "", "Namespace" => core::v1::Namespace;
    "", "ConfigMap" => core::v1::ConfigMap;
    "", "Secret" => core::v1::Secret;
    "", "Event" => core::v1::Event;
    "", "ServiceAccount" => core::v1::ServiceAccount;
    "apps", "ReplicaSet" => apps::v1::ReplicaSet;
    "apps", "Deployment" => apps::v1::Deployment;
    "batch", "Job" => batch::v1::Job;
    "rbac.authorization.k8s.io", "Role" => rbac::v1::Role;
    "rbac.authorization.k8s.io", "RoleBinding" => rbac::v1::RoleBinding;
    "rbac.authorization.k8s.io", "ClusterRole" => rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io", "ClusterRoleBinding" => rbac::v1::ClusterRoleBinding;
    "authentication.k8s.io", "TokenReview" => authentication::v1::TokenReview;
    "authentication.k8s.io", "TokenRequest" => authentication::v1::TokenRequest;
};

/// The definition name of a kind (`io.k8s.api.core.v1.Pod`).
fn definition_name(group: &str, kind: &str) -> String {
    let package = match group {
        "" => "core".to_string(),
        g => g.split('.').next().unwrap_or(g).to_string(),
    };
    format!("io.k8s.api.{package}.v1.{kind}")
}

/// The definitions reachable from the kinds of `group` (every kind when `None`), with
/// `$ref`s under `path` (`/components/schemas` for v3, `/definitions` for v2).
pub(crate) fn definitions(group: Option<&str>, path: &str) -> Map<String, Value> {
    let mut settings = SchemaSettings::openapi3();
    settings.definitions_path = path.to_string().into();
    settings.meta_schema = None;
    let mut g = settings.into_generator();
    let chosen = KINDS.iter().filter(|k| group.is_none_or(|g| g == k.group));
    let chosen: Vec<&KindSchema> = chosen.collect();
    for k in &chosen {
        (k.add)(&mut g);
    }
    let mut defs = g.take_definitions(true);
    // k8s-openapi requires `metadata` (its Rust field is not optional); Kubernetes' own
    // schemas never do, and kubectl's validation would refuse an object without one.
    for d in defs.values_mut() {
        if let Some(Value::Array(required)) = d.get_mut("required") {
            required.retain(|r| r != "metadata");
            if required.is_empty()
                && let Some(o) = d.as_object_mut()
            {
                o.remove("required");
            }
        }
    }
    for k in chosen {
        if let Some(Value::Object(o)) = defs.get_mut(&definition_name(k.group, k.kind)) {
            o.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": k.group, "kind": k.kind, "version": "v1"}]),
            );
        }
    }
    defs
}

/// A JSON document, built once and kept.
pub(crate) fn cached(name: &str, build: impl FnOnce() -> Value) -> Bytes {
    cached_bytes(name, || serde_json::to_vec(&build()).unwrap_or_default())
}

/// A document's bytes, built once and kept.
pub(crate) fn cached_bytes(name: &str, build: impl FnOnce() -> Vec<u8>) -> Bytes {
    static DOCS: Mutex<BTreeMap<String, Bytes>> = Mutex::new(BTreeMap::new());
    let mut docs = DOCS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(b) = docs.get(name) {
        return b.clone();
    }
    let bytes = Bytes::from(build());
    docs.insert(name.to_string(), bytes.clone());
    bytes
}
