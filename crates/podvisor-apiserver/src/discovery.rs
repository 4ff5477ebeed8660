//! API discovery, which kubectl reads before any verb: `/version`, `/api`, `/api/v1`,
//! `/apis`, `/apis/apps`, `/apis/apps/v1` in their legacy (non-aggregated) forms.

use podvisor_store::Resource;
use serde_json::{Value, json};

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub fn version() -> Value {
    json!({
        "major": podvisor_core::version::MAJOR,
        "minor": podvisor_core::version::MINOR,
        "gitVersion": podvisor_core::version::GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
}

fn group(name: &str) -> Value {
    let gv = json!({"groupVersion": format!("{name}/v1"), "version": "v1"});
    json!({"name": name, "versions": [gv], "preferredVersion": gv})
}

/// The named groups whose kinds the store serves (each at `v1`), and the groups of one
/// verb each (`authentication.k8s.io` for TokenReview).
pub const GROUPS: [&str; 4] = ["apps", "batch", podvisor_store::RBAC, AUTHENTICATION];

pub const AUTHENTICATION: &str = "authentication.k8s.io";

/// The groups served; `metrics.k8s.io` when the node's usage can be read.
pub fn groups(metrics: bool) -> Value {
    let mut groups: Vec<Value> = GROUPS.iter().map(|g| group(g)).collect();
    if metrics {
        groups.push(crate::resource_metrics::group());
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// One named group (`/apis/{name}`), `None` if not served.
pub fn named_group(name: &str) -> Option<Value> {
    GROUPS.contains(&name).then(|| {
        let mut g = group(name);
        g["kind"] = "APIGroup".into();
        g["apiVersion"] = "v1".into();
        g
    })
}

fn entry(name: String, r: &Resource, verbs: &[&str]) -> Value {
    let mut e = json!({
        "name": name,
        "singularName": "",
        "namespaced": r.namespaced(),
        "kind": r.kind.as_str(),
        "verbs": verbs,
    });
    if !name.contains('/') {
        e["singularName"] = r.singular.into();
        e["shortNames"] = json!(r.short_names);
        if matches!(r.plural, "pods" | "replicasets" | "deployments" | "jobs") {
            e["categories"] = json!(["all"]);
        }
    }
    e
}

fn subresources(r: &Resource) -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let mut out = Vec::new();
    if r.has_status {
        out.push(("status", r.kind.as_str(), vec!["get", "patch", "update"]));
    }
    match r.plural {
        "pods" => {
            out.push(("log", "Pod", vec!["get"]));
            out.push(("ephemeralcontainers", "Pod", vec!["get", "patch", "update"]));
            out.push(("resize", "Pod", vec!["get", "patch", "update"]));
            out.push(("eviction", "Eviction", vec!["create"]));
            out.push(("exec", "PodExecOptions", vec!["create", "get"]));
            out.push(("attach", "PodAttachOptions", vec!["create", "get"]));
            out.push((
                "portforward",
                "PodPortForwardOptions",
                vec!["create", "get"],
            ));
        }
        "replicasets" | "deployments" => {
            out.push(("scale", "Scale", vec!["get", "patch", "update"]))
        }
        "serviceaccounts" => out.push(("token", "TokenRequest", vec!["create"])),
        _ => {}
    }
    out
}

/// Whether kube-apiserver serves subresource `sub` of `r`; a request for any other is a
/// 404 whatever its verb (`namespaces/x/eviction` is no eviction, `secrets/x/status` no
/// status).
pub(crate) fn serves(r: &Resource, sub: &str) -> bool {
    subresources(r).iter().any(|(name, ..)| *name == sub)
}

/// The resources of `group` ("" for core), with their subresources.
pub fn resources(group: &str) -> Value {
    let mut list = Vec::new();
    for r in Resource::ALL.iter().filter(|r| r.group == group) {
        list.push(entry(r.plural.to_string(), r, &VERBS));
        for (sub, kind, verbs) in subresources(r) {
            let mut e = entry(format!("{}/{sub}", r.plural), r, &verbs);
            e["kind"] = kind.into();
            list.push(e);
        }
    }
    if group == AUTHENTICATION {
        list.push(
            json!({"name": "tokenreviews", "singularName": "tokenreview",
            "namespaced": false, "kind": "TokenReview", "verbs": ["create"]}),
        );
    }
    let gv = if group.is_empty() {
        "v1".to_string()
    } else {
        format!("{group}/v1")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list})
}
