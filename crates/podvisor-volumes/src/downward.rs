//! The downward API: what a pod may read of itself, for an environment variable or a
//! file of a downwardAPI volume (the kubelet's `fieldpath` and `ExtractResourceValueByContainerName`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceFieldSelector};
use podvisor_core::fit::Allocatable;
use podvisor_core::{PodExt, quantity};

use crate::error::VolumeError;

/// The pod as the downward API sees it at a sync.
#[derive(Debug, Clone, Copy)]
pub struct PodFacts<'a> {
    pub pod: &'a Pod,
    pub node_name: &'a str,
    pub pod_ip: Option<&'a str>,
    pub host_ip: Option<&'a str>,
    /// A container's limit when it sets none.
    pub allocatable: Allocatable,
}

/// Where a field is read for: some paths are for files only (a whole map), some for
/// the environment only (what the pod learns once it runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum For {
    Env,
    File,
}

/// `metadata.labels['app']` → `("metadata.labels", "app")`.
fn subscript(path: &str) -> Option<(&str, &str)> {
    let (base, rest) = path.split_once("['")?;
    Some((base, rest.strip_suffix("']")?))
}

/// Labels or annotations as a downwardAPI file holds them: `key="value"` lines, sorted.
fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    m.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The value of `fieldRef.fieldPath`.
pub(crate) fn field_value(f: &PodFacts, path: &str, place: For) -> Result<String, VolumeError> {
    let meta = &f.pod.metadata;
    let unsupported = || VolumeError::FieldPath(path.to_string());
    if let Some((base, key)) = subscript(path) {
        let map = match base {
            "metadata.labels" => meta.labels.as_ref(),
            "metadata.annotations" => meta.annotations.as_ref(),
            _ => return Err(unsupported()),
        };
        return Ok(map.and_then(|m| m.get(key)).cloned().unwrap_or_default());
    }
    let spec = f.pod.spec.as_ref();
    Ok(match (path, place) {
        ("metadata.name", _) => f.pod.name().to_string(),
        ("metadata.namespace", _) => f.pod.namespace().to_string(),
        ("metadata.uid", _) => meta.uid.clone().unwrap_or_default(),
        ("metadata.labels", For::File) => format_map(meta.labels.as_ref()),
        ("metadata.annotations", For::File) => format_map(meta.annotations.as_ref()),
        ("spec.nodeName", For::Env) => f.node_name.to_string(),
        ("spec.serviceAccountName", For::Env) => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        ("status.podIP" | "status.podIPs", For::Env) => f.pod_ip.unwrap_or_default().to_string(),
        ("status.hostIP" | "status.hostIPs", For::Env) => f.host_ip.unwrap_or_default().to_string(),
        _ => return Err(unsupported()),
    })
}

fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    pod.containers()
        .iter()
        .chain(pod.init_containers())
        .find(|c| c.name == name)
}

/// `ceil(value / divisor)`, both in the same unit.
fn ceil_div(value: i64, divisor: i64) -> i64 {
    if divisor <= 0 {
        return value;
    }
    value.div_euclid(divisor) + i64::from(value.rem_euclid(divisor) != 0)
}

/// The value of `resourceFieldRef` for container `default_container` unless it names
/// another: a limit the container does not set is the node's allocatable.
pub(crate) fn resource_value(
    f: &PodFacts,
    sel: &ResourceFieldSelector,
    default_container: Option<&str>,
) -> Result<String, VolumeError> {
    let name = sel
        .container_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .or(default_container)
        .unwrap_or_default();
    let c =
        find_container(f.pod, name).ok_or_else(|| VolumeError::NoContainer(name.to_string()))?;
    let res = c.resources.clone().unwrap_or_default();
    let get = |m: &Option<BTreeMap<_, _>>, k: &str| {
        m.as_ref()
            .and_then(|m: &BTreeMap<String, _>| m.get(k))
            .map(|q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| q.0.clone())
    };
    let bad = |e: quantity::QuantityError| VolumeError::Quantity(e.to_string());
    // A divisor of zero is none: kube-apiserver serves an unset one as "0" (the Go type's
    // zero quantity), and the kubelet takes it as 1.
    let divisor = sel
        .divisor
        .as_ref()
        .map(|d| d.0.as_str())
        .filter(|d| quantity::parse_milli(d).is_ok_and(|m| m != 0))
        .unwrap_or("1");
    let (cpu, value) = match sel.resource.as_str() {
        "limits.cpu" => (true, get(&res.limits, "cpu")),
        "requests.cpu" => (true, get(&res.requests, "cpu")),
        "limits.memory" => (false, get(&res.limits, "memory")),
        "requests.memory" => (false, get(&res.requests, "memory")),
        other => return Err(VolumeError::Resource(other.to_string())),
    };
    let limit = sel.resource.starts_with("limits.");
    let n = if cpu {
        let v = match value {
            Some(v) => quantity::parse_milli(&v).map_err(bad)?,
            None if limit => f.allocatable.cpu_milli,
            None => 0,
        };
        ceil_div(v, quantity::parse_milli(divisor).map_err(bad)?)
    } else {
        let v = match value {
            Some(v) => quantity::parse_units(&v).map_err(bad)?,
            None if limit => f.allocatable.memory_bytes,
            None => 0,
        };
        ceil_div(v, quantity::parse_units(divisor).map_err(bad)?)
    };
    Ok(n.to_string())
}

#[cfg(test)]
#[path = "downward_tests.rs"]
mod tests;
