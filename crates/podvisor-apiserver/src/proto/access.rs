//! The protobuf messages of service accounts and RBAC that kubectl sends that way
//! (`kubectl create serviceaccount|token|role|rolebinding|clusterrole|clusterrolebinding`):
//! the wire-compatible subset of upstream's `generated.proto`, as in the parent module.

use prost::Message;
use serde::Serialize;

use super::{ObjectMeta, unset};

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct LocalObjectReference {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "3")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    automount_service_account_token: Option<bool>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct BoundObjectReference {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(rename = "apiVersion", skip_serializing_if = "unset")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "unset")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "unset")]
    uid: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    audiences: Vec<String>,
    #[prost(int64, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    expiration_seconds: Option<i64>,
    #[prost(message, optional, tag = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    bound_object_ref: Option<BoundObjectReference>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct TokenRequest {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<TokenRequestSpec>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    non_resource_urls: Vec<String>,
}

/// A Role or a ClusterRole (aggregation is not read: podvisor does not aggregate).
#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct Role {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Subject {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(skip_serializing_if = "unset")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "unset")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "unset")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RoleRef {
    #[prost(string, optional, tag = "1")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
}

/// A RoleBinding or a ClusterRoleBinding.
#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    role_ref: Option<RoleRef>,
}
