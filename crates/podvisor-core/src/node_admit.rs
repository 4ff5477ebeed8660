//! The kubelet's admission of a pod bound to its node, beyond resources (`fit`): its
//! sysctls against the allowlist and its OS (`intrinsic`, which `fit` runs for every pod,
//! static ones included), then the checks of its `GeneralPredicates` that look at the
//! Node and the other pods. A pod that
//! fails one is never run: the kubelet sets it Failed with the predicate's name as the
//! reason.
//!
//! - `NodeAffinity`: `spec.nodeSelector` and the required node affinity against the
//!   Node's labels (and `metadata.name` for `matchFields`);
//! - `NodePorts`: a host port another active pod of the node already uses (same protocol,
//!   and the same host IP or either one all addresses);
//! - `TaintToleration`: a NoExecute taint of the Node the pod does not tolerate (the
//!   scheduler's business are NoSchedule taints; a pod bound by hand passes them).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint};

use crate::PodExt;
use crate::fit::Rejection;
use crate::taints::{self, NO_EXECUTE};
use crate::validation::security::{SAFE_SYSCTLS, dotted_sysctl};

fn rejected(reason: &'static str, why: String) -> Rejection {
    Rejection {
        reason,
        message: format!("Pod was rejected: Predicate {reason} failed: {why}"),
    }
}

/// What the node refuses of a pod whatever else runs: a sysctl not on its allowlist (the
/// kubelet's safe ones; `SysctlForbidden`), then an OS other than Linux
/// (`PodOSNotSupported`), in the kubelet's admit handlers' order.
pub fn intrinsic(pod: &Pod) -> Result<(), Rejection> {
    let spec = pod.spec.as_ref();
    let sysctls = spec
        .and_then(|s| s.security_context.as_ref())
        .and_then(|sc| sc.sysctls.as_deref())
        .unwrap_or_default();
    if let Some(s) = sysctls
        .iter()
        .find(|s| !SAFE_SYSCTLS.contains(&dotted_sysctl(&s.name).as_str()))
    {
        return Err(Rejection {
            reason: "SysctlForbidden",
            message: format!("forbidden sysctl: {:?} not allowlisted", s.name),
        });
    }
    if spec
        .and_then(|s| s.os.as_ref())
        .is_some_and(|os| os.name != "linux")
    {
        return Err(Rejection {
            reason: "PodOSNotSupported",
            message: "Failed to admit pod as the OS field doesn't match node OS".into(),
        });
    }
    Ok(())
}

/// Every check, in the kubelet's order.
pub fn admit(pod: &Pod, node: &Node, active: &[&Pod]) -> Result<(), Rejection> {
    intrinsic(pod)?;
    if !matches_node(pod, node) {
        let why = "node(s) didn't match Pod's node affinity/selector".to_string();
        return Err(rejected("NodeAffinity", why));
    }
    if let Some((proto, ip, port)) = host_port_conflict(pod, active) {
        let why = format!(
            "node(s) didn't have free ports for the requested pod ports ({proto} {ip}:{port})"
        );
        return Err(rejected("NodePorts", why));
    }
    let node_taints: &[Taint] = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    if let Some(t) = taints::untolerated(node_taints, tolerations, &[NO_EXECUTE]) {
        let why = format!("node(s) had untolerated taint {{{}}}", taints::describe(t));
        return Err(rejected("TaintToleration", why));
    }
    Ok(())
}

/// Whether the pod's node selector and required node affinity admit `node`.
pub fn matches_node(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let name = node.metadata.name.as_deref().unwrap_or_default();
    // The terms are ORed; an empty list matches nothing, as the scheduler has it.
    let affinity_ok = required.is_none_or(|r| {
        r.node_selector_terms
            .iter()
            .any(|t| term_matches(t, labels, name))
    });
    selector_ok && affinity_ok
}

/// A term's requirements are ANDed; a term with none matches nothing.
fn term_matches(t: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let exprs = t.match_expressions.as_deref().unwrap_or_default();
    let fields = t.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let by_name = BTreeMap::from([("metadata.name".to_string(), name.to_string())]);
    exprs.iter().all(|r| requirement(r, labels)) && fields.iter().all(|r| requirement(r, &by_name))
}

fn requirement(r: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let got = labels.get(&r.key);
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => got.is_some_and(|v| values.contains(v)),
        "NotIn" => got.is_none_or(|v| !values.contains(v)),
        "Exists" => got.is_some(),
        "DoesNotExist" => got.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), Some(bound)) = (
                got.and_then(|v| number(v)),
                values.first().and_then(|v| number(v)),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                have > bound
            } else {
                have < bound
            }
        }
        _ => false,
    }
}

/// The host ports a pod asks for: (protocol, host IP, port).
fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    let all = pod.containers().iter().chain(pod.init_containers());
    all.flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|h| *h > 0)?;
            let proto = p.protocol.clone().unwrap_or_else(|| "TCP".into());
            let ip = p
                .host_ip
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| "0.0.0.0".into());
            Some((proto, ip, port))
        })
        .collect()
}

/// Whether the pod asks for a host port (only then do other pods matter to `admit`).
pub fn wants_host_ports(pod: &Pod) -> bool {
    !host_ports(pod).is_empty()
}

/// The first of the pod's host ports an active pod already holds.
fn host_port_conflict(pod: &Pod, active: &[&Pod]) -> Option<(String, String, i32)> {
    let wanted = host_ports(pod);
    if wanted.is_empty() {
        return None;
    }
    let held: Vec<_> = active.iter().flat_map(|p| host_ports(p)).collect();
    let any = |ip: &str| ip == "0.0.0.0" || ip == "::";
    wanted.into_iter().find(|(proto, ip, port)| {
        held.iter().any(|(p2, ip2, port2)| {
            p2 == proto && port2 == port && (ip == ip2 || any(ip) || any(ip2))
        })
    })
}

#[cfg(test)]
#[path = "node_admit_tests.rs"]
mod tests;
