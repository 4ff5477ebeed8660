//! The default RBAC policy, as kube-apiserver's bootstrap: `cluster-admin` (everything),
//! `admin`, `edit` and `view` (to bind in a namespace, over what this node serves), and
//! `system:discovery` bound to every authenticated caller (the discovery paths a client
//! reads first). Created when missing, never overwritten: an operator's change stays.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| x.to_string()).collect()
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

fn meta(name: &str) -> ObjectMeta {
    let labels = BTreeMap::from([("kubernetes.io/bootstrapping".into(), "rbac-defaults".into())]);
    let annotations = BTreeMap::from([(
        "rbac.authorization.kubernetes.io/autoupdate".into(),
        "true".into(),
    )]);
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(labels),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}

fn role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta(name),
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

/// What `view` reads (never Secrets, as Kubernetes' own).
fn view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &[""],
            &[
                "pods",
                "pods/log",
                "pods/status",
                "configmaps",
                "events",
                "serviceaccounts",
                "namespaces",
                "namespaces/status",
            ],
            &READ,
        ),
        rule(
            &["apps"],
            &[
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
            ],
            &READ,
        ),
        rule(&["batch"], &["jobs", "jobs/status"], &READ),
    ]
}

/// What `edit` adds: writing the workloads, their configuration and Secrets, and getting
/// into pods.
fn edit_rules() -> Vec<PolicyRule> {
    let mut rules = view_rules();
    let all: Vec<&str> = READ.iter().chain(WRITE.iter()).copied().collect();
    rules.extend([
        rule(
            &[""],
            &["pods", "configmaps", "secrets", "serviceaccounts"],
            &all,
        ),
        rule(
            &[""],
            &[
                "pods/exec",
                "pods/attach",
                "pods/portforward",
                "pods/eviction",
                "serviceaccounts/token",
            ],
            &["create", "get"],
        ),
        rule(
            &["apps"],
            &[
                "replicasets",
                "replicasets/scale",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
            ],
            &all,
        ),
        rule(&["batch"], &["jobs"], &all),
    ]);
    rules
}

fn admin_rules() -> Vec<PolicyRule> {
    let mut rules = edit_rules();
    let all: Vec<&str> = READ.iter().chain(WRITE.iter()).copied().collect();
    rules.push(rule(
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
        &all,
    ));
    rules
}

const DISCOVERY: [&str; 11] = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/readyz",
    "/openapi",
    "/openapi/*",
    "/version",
    "/version/",
];

/// The default ClusterRoles.
pub fn cluster_roles() -> Vec<ClusterRole> {
    let everything = vec![
        rule(&["*"], &["*"], &["*"]),
        PolicyRule {
            non_resource_urls: Some(strings(&["*"])),
            verbs: strings(&["*"]),
            ..PolicyRule::default()
        },
    ];
    let discovery = PolicyRule {
        non_resource_urls: Some(strings(&DISCOVERY)),
        verbs: strings(&["get"]),
        ..PolicyRule::default()
    };
    vec![
        role("cluster-admin", everything),
        role("admin", admin_rules()),
        role("edit", edit_rules()),
        role("view", view_rules()),
        role("system:discovery", vec![discovery]),
    ]
}

fn binding(name: &str, group: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(name),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: name.into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Group".into(),
            name: group.into(),
            namespace: None,
        }]),
    }
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    vec![
        binding("cluster-admin", "system:masters"),
        binding("system:discovery", "system:authenticated"),
    ]
}
