//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), for the kinds that
//! kubectl sends that way: its generators (`kubectl create namespace|configmap|secret`,
//! and those of `access.rs`) and `kubectl drain`'s evictions. Each body is kube-apiserver's envelope (the magic `k8s\0`,
//! then a `runtime.Unknown` naming the type and carrying the object's bytes); the messages
//! below are the wire-compatible subset of the upstream `generated.proto` files those kinds
//! need (same field numbers; fields podvisor does not serve are skipped by prost as unknown).
//! A decoded object becomes the same JSON a client would have sent, so everything after
//! this point is shared with JSON bodies. Other kinds in protobuf are refused (415) with the
//! way around it.

use std::collections::BTreeMap;

use base64::Engine as _;
use prost::Message;
use serde::Serialize;
use serde_json::Value;

use crate::status::ApiError;

mod access;
mod guard;
mod workloads;

const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// `runtime.Unknown`: the envelope every protobuf body comes in.
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    content_encoding: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    api_version: Option<String>,
    #[prost(bool, optional, tag = "6")]
    #[serde(skip_serializing_if = "Option::is_none")]
    controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    #[serde(skip_serializing_if = "Option::is_none")]
    block_owner_deletion: Option<bool>,
}

/// What a client may set in `metadata` (server-set fields are the store's to fill).
#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(skip_serializing_if = "unset")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "unset")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "6")]
    #[serde(skip_serializing_if = "unset")]
    resource_version: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    #[serde(rename = "binaryData", serialize_with = "base64_map")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
struct Secret {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    #[serde(
        serialize_with = "base64_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    #[serde(rename = "type", skip_serializing_if = "unset")]
    type_: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    #[serde(rename = "stringData", skip_serializing_if = "BTreeMap::is_empty")]
    string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    #[serde(skip_serializing_if = "Option::is_none")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
struct Namespace {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct Preconditions {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    uid: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(skip_serializing_if = "unset")]
    resource_version: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions {
    #[prost(int64, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    grace_period_seconds: Option<i64>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    preconditions: Option<Preconditions>,
    #[prost(bool, optional, tag = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    orphan_dependents: Option<bool>,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "unset")]
    propagation_policy: Option<String>,
    #[prost(string, repeated, tag = "5")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dry_run: Vec<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct Eviction {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    delete_options: Option<DeleteOptions>,
}

/// gogo-protobuf writes every string field, set or not: an empty one was not set.
fn unset(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

fn base64_map<S: serde::Serializer>(
    m: &BTreeMap<String, Vec<u8>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let engine = base64::engine::general_purpose::STANDARD;
    s.collect_map(m.iter().map(|(k, v)| (k, engine.encode(v))))
}

fn to_json<M: Message + Default + Serialize>(raw: &[u8], tm: &TypeMeta) -> Result<Value, ApiError> {
    let m = M::decode(raw).map_err(|e| {
        ApiError::bad_request(format!("the protobuf body could not be decoded: {e}"))
    })?;
    let mut v = serde_json::to_value(&m).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "apiVersion".into(),
            tm.api_version.clone().unwrap_or_default().into(),
        );
        o.insert("kind".into(), tm.kind.clone().unwrap_or_default().into());
    }
    Ok(v)
}

/// The JSON form of a protobuf body, or why it cannot be read.
pub fn decode(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let inner = body.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request("the protobuf body lacks Kubernetes' k8s\\0 prefix")
    })?;
    let unknown = Unknown::decode(inner).map_err(|e| {
        ApiError::bad_request(format!("the protobuf envelope could not be decoded: {e}"))
    })?;
    if unknown
        .content_encoding
        .as_deref()
        .is_some_and(|e| !e.is_empty())
    {
        return Err(ApiError::unsupported_media(content_type));
    }
    let tm = unknown.type_meta.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    match (
        tm.api_version.as_deref().unwrap_or_default(),
        tm.kind.as_deref().unwrap_or_default(),
    ) {
        ("v1", "ConfigMap") => to_json::<ConfigMap>(&raw, &tm),
        ("v1", "Secret") => to_json::<Secret>(&raw, &tm),
        ("v1", "Namespace") => to_json::<Namespace>(&raw, &tm),
        ("v1", "DeleteOptions") | ("meta.k8s.io/v1", "DeleteOptions") => {
            to_json::<DeleteOptions>(&raw, &tm)
        }
        ("policy/v1" | "policy/v1beta1", "Eviction") => to_json::<Eviction>(&raw, &tm),
        ("v1", "ServiceAccount") => to_json::<access::ServiceAccount>(&raw, &tm),
        ("authentication.k8s.io/v1", "TokenRequest") => to_json::<access::TokenRequest>(&raw, &tm),
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => {
            to_json::<access::Role>(&raw, &tm)
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            to_json::<access::RoleBinding>(&raw, &tm)
        }
        ("apps/v1", "Deployment") => workloads::guarded::<workloads::Deployment>(&raw, &tm),
        ("batch/v1", "Job") => workloads::guarded::<workloads::Job>(&raw, &tm),
        _ => Err(ApiError::unsupported_media(content_type)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let u = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: None,
        };
        let mut out = MAGIC.to_vec();
        out.extend(u.encode_to_vec());
        out
    }

    /// As gogo-protobuf writes it: unset strings present and empty.
    fn meta(name: &str) -> Option<ObjectMeta> {
        Some(ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            labels: [("a".to_string(), "b".to_string())].into(),
            ..ObjectMeta::default()
        })
    }

    #[test]
    fn a_configmap_reads_as_the_json_a_client_would_send() {
        let cm = ConfigMap {
            metadata: meta("cfg"),
            data: [("k".to_string(), "v".to_string())].into(),
            binary_data: [("bin".to_string(), vec![0, 1, 2])].into(),
            immutable: None,
        };
        let v = decode(
            "application/vnd.kubernetes.protobuf",
            &envelope("v1", "ConfigMap", cm.encode_to_vec()),
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "labels": {"a": "b"}},
                "data": {"k": "v"}, "binaryData": {"bin": "AAEC"}})
        );
    }

    #[test]
    fn secrets_keep_their_type_and_base64_data() {
        let s = Secret {
            metadata: meta("s"),
            data: [("pw".to_string(), b"hunter2".to_vec())].into(),
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        let v = decode(
            "application/vnd.kubernetes.protobuf",
            &envelope("v1", "Secret", s.encode_to_vec()),
        )
        .unwrap();
        assert_eq!(v["type"], "Opaque");
        assert_eq!(v["data"]["pw"], "aHVudGVyMg==");
    }

    #[test]
    fn an_eviction_carries_its_delete_options() {
        let e = Eviction {
            metadata: meta("web"),
            delete_options: Some(DeleteOptions {
                grace_period_seconds: Some(5),
                ..DeleteOptions::default()
            }),
        };
        let v = decode(
            "application/vnd.kubernetes.protobuf",
            &envelope("policy/v1", "Eviction", e.encode_to_vec()),
        )
        .unwrap();
        assert_eq!(v["deleteOptions"]["gracePeriodSeconds"], 5);
        assert_eq!(v["metadata"]["name"], "web");
    }

    #[test]
    fn other_kinds_and_broken_bodies_are_refused_with_their_reason() {
        let pod = envelope("v1", "Pod", vec![]);
        assert_eq!(
            decode("application/vnd.kubernetes.protobuf", &pod)
                .unwrap_err()
                .code,
            415
        );
        assert_eq!(
            decode("application/vnd.kubernetes.protobuf", b"{}")
                .unwrap_err()
                .code,
            400
        );
        let mut truncated = envelope("v1", "ConfigMap", meta("x").unwrap().encode_to_vec());
        truncated.truncate(truncated.len() - 3);
        assert_eq!(
            decode("application/vnd.kubernetes.protobuf", &truncated)
                .unwrap_err()
                .code,
            400
        );
    }
}
