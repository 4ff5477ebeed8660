//! The types nested in a pod's spec below the tables of `coverage_tests.rs`, found by
//! walking the pod's types (`coverage_walk.rs`) through every honoured field: each of
//! their fields is honoured or left to the cluster. A type a new Kubernetes nests there,
//! or a field it adds to one, fails the walk until it is classified here (or refused
//! where it hangs, in a table with a proof).

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::PodSpec;

use super::coverage_tests::{Class, tables};
use super::coverage_walk::{Shape, shape};

type Fields = Vec<(&'static str, bool)>;

/// All the fields honoured.
fn all(fields: &[&'static str]) -> Fields {
    fields.iter().map(|f| (*f, true)).collect()
}

/// Each nested type's fields: honoured (`true`: the walk goes on into it) or the
/// scheduler's to act on (`false`).
fn nested() -> Vec<(&'static str, Fields)> {
    vec![
        (
            "ContainerPort",
            all(&["containerPort", "hostIP", "hostPort", "name", "protocol"]),
        ),
        ("EnvVar", all(&["name", "value", "valueFrom"])),
        (
            "EnvFromSource",
            all(&["configMapRef", "prefix", "secretRef"]),
        ),
        ("ConfigMapEnvSource", all(&["name", "optional"])),
        ("SecretEnvSource", all(&["name", "optional"])),
        ("ConfigMapKeySelector", all(&["key", "name", "optional"])),
        ("SecretKeySelector", all(&["key", "name", "optional"])),
        ("ObjectFieldSelector", all(&["apiVersion", "fieldPath"])),
        (
            "ResourceFieldSelector",
            all(&["containerName", "divisor", "resource"]),
        ),
        ("ExecAction", all(&["command"])),
        ("HTTPHeader", all(&["name", "value"])),
        ("TCPSocketAction", all(&["host", "port"])),
        ("SleepAction", all(&["seconds"])),
        (
            "ContainerResizePolicy",
            all(&["resourceName", "restartPolicy"]),
        ),
        ("Capabilities", all(&["add", "drop"])),
        ("SeccompProfile", all(&["localhostProfile", "type"])),
        ("SELinuxOptions", all(&["level", "role", "type", "user"])),
        ("PodReadinessGate", all(&["conditionType"])),
        ("PodOS", all(&["name"])),
        ("AppArmorProfile", all(&["localhostProfile", "type"])),
        ("PodDNSConfig", all(&["nameservers", "options", "searches"])),
        ("PodDNSConfigOption", all(&["name", "value"])),
        ("HostAlias", all(&["hostnames", "ip"])),
        ("LocalObjectReference", all(&["name"])),
        (
            "Toleration",
            all(&["effect", "key", "operator", "tolerationSeconds", "value"]),
        ),
        ("Sysctl", all(&["name", "value"])),
        ("HostPathVolumeSource", all(&["path", "type"])),
        ("ConfigMapProjection", all(&["items", "name", "optional"])),
        ("SecretProjection", all(&["items", "name", "optional"])),
        ("DownwardAPIProjection", all(&["items"])),
        (
            "NodeAffinity",
            vec![
                ("requiredDuringSchedulingIgnoredDuringExecution", true),
                // Preferences are the scheduler's; a node has nothing to do with them.
                ("preferredDuringSchedulingIgnoredDuringExecution", false),
            ],
        ),
        ("NodeSelector", all(&["nodeSelectorTerms"])),
        (
            "NodeSelectorTerm",
            all(&["matchExpressions", "matchFields"]),
        ),
        (
            "NodeSelectorRequirement",
            all(&["key", "operator", "values"]),
        ),
        ("ContainerRestartRule", all(&["action", "exitCodes"])),
        (
            "ContainerRestartRuleOnExitCodes",
            all(&["operator", "values"]),
        ),
    ]
}

fn classes() -> HashMap<&'static str, Fields> {
    let mut out: HashMap<&'static str, Vec<(&'static str, bool)>> = tables()
        .into_iter()
        .map(|t| {
            let honoured = t
                .classes
                .iter()
                .map(|(f, c)| (*f, matches!(c, Class::Honoured | Class::Partly(_))))
                .collect();
            (t.name, honoured)
        })
        .collect();
    for (name, fields) in nested() {
        out.insert(name, fields);
    }
    out
}

#[test]
fn every_type_nested_in_a_pod_spec_is_classified() {
    let classes = classes();
    let mut queue: Vec<Vec<&'static str>> = vec![Vec::new()];
    let mut seen = HashSet::new();
    let mut problems = Vec::new();
    while let Some(path) = queue.pop() {
        let Shape::Struct(name, fields) = shape::<PodSpec>(&path) else {
            continue;
        };
        if !seen.insert(name) {
            continue;
        }
        let Some(known) = classes.get(name) else {
            problems.push(format!(
                "{name} (spec.{}): not classified: {fields:?}",
                path.join(".")
            ));
            continue;
        };
        for f in &fields {
            match known.iter().find(|(k, _)| k == f) {
                None => problems.push(format!("{name}.{f}: new, neither honoured nor refused")),
                Some((_, true)) => queue.push(path.iter().copied().chain([*f]).collect()),
                Some((_, false)) => {}
            }
        }
        for (k, _) in known {
            if !fields.contains(k) {
                problems.push(format!(
                    "{name}.{k}: classified, but the type has no such field"
                ));
            }
        }
    }
    for (name, _) in nested() {
        if !seen.contains(name) {
            problems.push(format!(
                "{name}: classified, but no honoured field leads to it"
            ));
        }
    }
    problems.sort();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
