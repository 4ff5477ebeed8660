//! The protobuf messages of Deployments and Jobs as kubectl's generators write them
//! (`kubectl create deployment|job`): metadata, the spec's own fields, and the pod template
//! with the container fields those generators set (name, image, command, args, ports, env,
//! resources, working directory, pull and termination-message policies). A body carrying
//! anything else is refused by the guard (`guard.rs`), naming the field: JSON has it all.

use std::collections::BTreeMap;

use prost::Message;
use serde::Serialize;

use serde_json::Value;

use super::{ObjectMeta, TypeMeta, guard, to_json, unset};
use crate::status::ApiError;

fn zero(v: &Option<i32>) -> bool {
    v.is_none_or(|v| v == 0)
}

fn no(v: &Option<bool>) -> bool {
    !v.unwrap_or(false)
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Requirement {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(string, optional, tag = "2")]
    operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    values: Vec<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LabelSelector {
    #[prost(btree_map = "string, string", tag = "1")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    match_labels: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    match_expressions: Vec<Requirement>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContainerPort {
    #[prost(string, optional, tag = "1")]
    #[serde(skip_serializing_if = "unset")]
    name: Option<String>,
    #[prost(int32, optional, tag = "2")]
    #[serde(skip_serializing_if = "zero")]
    host_port: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    container_port: Option<i32>,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "unset")]
    protocol: Option<String>,
    #[prost(string, optional, tag = "5")]
    #[serde(rename = "hostIP", skip_serializing_if = "unset")]
    host_ip: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct EnvVar {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(skip_serializing_if = "unset")]
    value: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct Quantity {
    #[prost(string, optional, tag = "1")]
    string: Option<String>,
}

fn quantities<S: serde::Serializer>(
    m: &BTreeMap<String, Quantity>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        m.iter()
            .map(|(k, q)| (k, q.string.clone().unwrap_or_default())),
    )
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct Resources {
    #[prost(btree_map = "string, message", tag = "1")]
    #[serde(
        serialize_with = "quantities",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    limits: BTreeMap<String, Quantity>,
    #[prost(btree_map = "string, message", tag = "2")]
    #[serde(
        serialize_with = "quantities",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    requests: BTreeMap<String, Quantity>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Container {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    #[serde(skip_serializing_if = "unset")]
    image: Option<String>,
    #[prost(string, repeated, tag = "3")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    command: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[prost(string, optional, tag = "5")]
    #[serde(skip_serializing_if = "unset")]
    working_dir: Option<String>,
    #[prost(message, repeated, tag = "6")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ports: Vec<ContainerPort>,
    #[prost(message, repeated, tag = "7")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvVar>,
    #[prost(message, optional, tag = "8")]
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<Resources>,
    #[prost(string, optional, tag = "13")]
    #[serde(skip_serializing_if = "unset")]
    termination_message_path: Option<String>,
    #[prost(string, optional, tag = "14")]
    #[serde(skip_serializing_if = "unset")]
    image_pull_policy: Option<String>,
    #[prost(bool, optional, tag = "16")]
    #[serde(skip_serializing_if = "no")]
    stdin: Option<bool>,
    #[prost(bool, optional, tag = "17")]
    #[serde(skip_serializing_if = "no")]
    stdin_once: Option<bool>,
    #[prost(bool, optional, tag = "18")]
    #[serde(skip_serializing_if = "no")]
    tty: Option<bool>,
    #[prost(string, optional, tag = "20")]
    #[serde(skip_serializing_if = "unset")]
    termination_message_policy: Option<String>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodSpec {
    #[prost(message, repeated, tag = "2")]
    containers: Vec<Container>,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "unset")]
    restart_policy: Option<String>,
    #[prost(int64, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    termination_grace_period_seconds: Option<i64>,
    #[prost(string, optional, tag = "6")]
    #[serde(skip_serializing_if = "unset")]
    dns_policy: Option<String>,
    #[prost(string, optional, tag = "8")]
    #[serde(skip_serializing_if = "unset")]
    service_account_name: Option<String>,
    #[prost(string, optional, tag = "19")]
    #[serde(skip_serializing_if = "unset")]
    scheduler_name: Option<String>,
    #[prost(message, repeated, tag = "20")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    init_containers: Vec<Container>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct PodTemplateSpec {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<PodSpec>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeploymentSpec {
    #[prost(int32, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[prost(message, optional, tag = "2")]
    selector: Option<LabelSelector>,
    #[prost(message, optional, tag = "3")]
    template: Option<PodTemplateSpec>,
    #[prost(int32, optional, tag = "5")]
    #[serde(skip_serializing_if = "zero")]
    min_ready_seconds: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    #[serde(skip_serializing_if = "Option::is_none")]
    revision_history_limit: Option<i32>,
    #[prost(bool, optional, tag = "7")]
    #[serde(skip_serializing_if = "no")]
    paused: Option<bool>,
    #[prost(int32, optional, tag = "9")]
    #[serde(skip_serializing_if = "Option::is_none")]
    progress_deadline_seconds: Option<i32>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct Deployment {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<DeploymentSpec>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct JobSpec {
    #[prost(int32, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    parallelism: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    completions: Option<i32>,
    #[prost(int64, optional, tag = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    active_deadline_seconds: Option<i64>,
    #[prost(message, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<LabelSelector>,
    #[prost(bool, optional, tag = "5")]
    #[serde(skip_serializing_if = "Option::is_none")]
    manual_selector: Option<bool>,
    #[prost(message, optional, tag = "6")]
    template: Option<PodTemplateSpec>,
    #[prost(int32, optional, tag = "7")]
    #[serde(skip_serializing_if = "Option::is_none")]
    backoff_limit: Option<i32>,
    #[prost(int32, optional, tag = "8")]
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_seconds_after_finished: Option<i32>,
    #[prost(bool, optional, tag = "10")]
    #[serde(skip_serializing_if = "Option::is_none")]
    suspend: Option<bool>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
pub(super) struct Job {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<JobSpec>,
}

/// As [`to_json`], for messages of which podvisor models a subset: a field the body
/// carries with content and the subset lacks refuses the body (415), naming it.
pub(super) fn guarded<M: Message + Default + Serialize>(
    raw: &[u8],
    tm: &TypeMeta,
) -> Result<Value, ApiError> {
    let m = M::decode(raw).map_err(|e| {
        ApiError::bad_request(format!("the protobuf body could not be decoded: {e}"))
    })?;
    let template = if tm.kind.as_deref() == Some("Job") {
        6
    } else {
        3
    };
    let zero_ok = move |path: &[u64], tag: u64| always_written(path, tag, template);
    if let Some(path) = guard::dropped(raw, &m.encode_to_vec(), &zero_ok) {
        let kind = tm.kind.as_deref().unwrap_or_default();
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "this protobuf {kind} sets a field podvisor does not read in protobuf ({path} of the message): send it as JSON or YAML (`kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)"
            ),
        ));
    }
    to_json::<M>(raw, tm)
}

/// The fields gogo-protobuf writes even unset (Go's non-pointer fields) that the subset
/// does not model, by where they are: the object's status; ObjectMeta's `selfLink`, `uid`,
/// `generation`, `creationTimestamp`; a Deployment's `strategy`; PodSpec's
/// `serviceAccount`, `nodeName`, `hostNetwork`, `hostPID`, `hostIPC`, `hostname`,
/// `subdomain`, `priorityClassName`. `template` is the spec's template tag (3 or 6).
fn always_written(path: &[u64], tag: u64, template: u64) -> bool {
    const META: &[u64] = &[4, 5, 7, 8];
    const POD_SPEC: &[u64] = &[9, 10, 11, 12, 13, 16, 17, 24];
    match path {
        [] => tag == 3,
        [1] | [2, _, 1] => META.contains(&tag),
        [2] => template == 3 && tag == 4,
        [2, t, 2] if *t == template => POD_SPEC.contains(&tag),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(raw: &[u8]) -> Result<Value, ApiError> {
        let tm = TypeMeta {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
        };
        guarded::<Deployment>(raw, &tm)
    }

    /// A Deployment body: metadata {name: "web"}, spec {replicas: 2, template {spec
    /// {containers [container], ...pod_extra}}}.
    fn body(container: &[u8], pod_extra: &[u8]) -> Vec<u8> {
        let mut pod_spec = vec![0x12, container.len() as u8];
        pod_spec.extend(container);
        pod_spec.extend(pod_extra);
        let mut template = vec![0x12, pod_spec.len() as u8];
        template.extend(&pod_spec);
        let mut spec = vec![0x08, 2, 0x1a, template.len() as u8];
        spec.extend(&template);
        let mut body = vec![0x0a, 5, 0x0a, 3, b'w', b'e', b'b', 0x12, spec.len() as u8];
        body.extend(&spec);
        body
    }

    #[test]
    fn a_deployment_reads_as_kubectl_wrote_it_and_an_unread_field_is_refused() {
        // {name: "c", image: "x", stdin: false}; PodSpec hostNetwork: false (written unset)
        let container = [0x0a, 1, b'c', 0x12, 1, b'x', 0x80, 0x01, 0x00];
        let v = read(&body(&container, &[0x58, 0x00])).unwrap();
        assert_eq!(v["spec"]["replicas"], 2);
        assert_eq!(v["spec"]["template"]["spec"]["containers"][0]["image"], "x");
        assert!(v["spec"]["template"]["spec"]["containers"][0]["stdin"].is_null());
        // A livenessProbe (Container field 10), which the subset does not read.
        let with_probe = [&container[..], &[0x52, 2, 0x20, 5]].concat();
        let e = read(&body(&with_probe, &[])).unwrap_err();
        assert_eq!(e.code, 415);
        assert!(
            e.message
                .contains("field 2.field 3.field 2.field 2.field 10"),
            "{}",
            e.message
        );
        // automountServiceAccountToken: false (PodSpec field 21) is a choice, not a zero.
        let e = read(&body(&container, &[0xa8, 0x01, 0x00])).unwrap_err();
        assert!(
            e.message.contains("field 2.field 3.field 2.field 21"),
            "{}",
            e.message
        );
    }
}
