//! Who may write a RoleBinding or a ClusterRoleBinding, as kube-apiserver's RBAC storage
//! decides (`pkg/registry/rbac/escalation_check.go`, `BindingAuthorized` and
//! `ConfirmNoEscalation`): a caller may bind a role it could grant anyway, either because
//! it may `bind` that very role (`clusterroles/<name>` or `roles/<name>`, in the binding's
//! namespace, or at the cluster scope for a ClusterRoleBinding), or because it already
//! holds every permission the role gives there (component-helpers' `Covers`).

use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use podvisor_client::Client;

use crate::error::AuthError;
use crate::rbac::{self, Request};

/// The API group of RBAC's kinds.
const RBAC: &str = "rbac.authorization.k8s.io";

/// Atomic rules compared at most: a role whose rules break down into more is granted only
/// to who may `bind` it (the comparison's cost stays bounded whatever a role holds).
const MAX_ATOMIC_RULES: usize = 10_000;

/// The `bind` request a binding to `role` in `namespace` (`None`: a ClusterRoleBinding)
/// needs when its writer does not hold the role's rules.
pub fn bind_request(role: &RoleRef, namespace: Option<&str>) -> Request {
    let resource = if role.kind == "ClusterRole" {
        "clusterroles"
    } else {
        "roles"
    };
    Request::Resource {
        verb: "bind".into(),
        group: RBAC.into(),
        resource: resource.into(),
        subresource: None,
        namespace: namespace.map(str::to_string),
        name: Some(role.name.clone()),
    }
}

/// Whether `user` may write a binding to `role` in `namespace`.
pub async fn may_bind(
    client: &Client,
    user: &UserInfo,
    role: &RoleRef,
    namespace: Option<&str>,
) -> Result<bool, AuthError> {
    // Unset since 1.37 means RBAC's own group, the only one a role can be in.
    if role.api_group.as_deref().unwrap_or(RBAC) != RBAC
        || !matches!(role.kind.as_str(), "Role" | "ClusterRole")
    {
        return Ok(false);
    }
    if rbac::authorize(client, user, &bind_request(role, namespace)).await? {
        return Ok(true);
    }
    let granted = rbac::role_rules(client, role, namespace).await?;
    let held = rbac::user_rules(client, user, namespace).await?;
    Ok(covers(&held, &granted))
}

/// Whether `owner` holds every permission of `servant`, as component-helpers' `Covers`:
/// each servant rule is broken down into one verb, group, resource and name at a time, and
/// each piece must be covered by one owner rule (a `*` in the servant needs a `*`).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> bool {
    let mut atoms = Vec::new();
    for rule in servant {
        if !breakdown(rule, &mut atoms) {
            return false;
        }
    }
    atoms
        .iter()
        .all(|a| owner.iter().any(|o| rule_covers(o, a)))
}

fn list(v: Option<&Vec<String>>) -> &[String] {
    v.map_or(&[], Vec::as_slice)
}

fn one(s: &str) -> Option<Vec<String>> {
    Some(vec![s.to_string()])
}

/// `rule` as atomic rules pushed on `out`; false past [`MAX_ATOMIC_RULES`].
fn breakdown(rule: &PolicyRule, out: &mut Vec<PolicyRule>) -> bool {
    let groups = list(rule.api_groups.as_ref());
    let resources = list(rule.resources.as_ref());
    let names = list(rule.resource_names.as_ref());
    let urls = list(rule.non_resource_urls.as_ref());
    let size = groups.len() * resources.len() * rule.verbs.len() * names.len().max(1)
        + urls.len() * rule.verbs.len();
    if out.len() + size > MAX_ATOMIC_RULES {
        return false;
    }
    for (group, resource, verb) in groups.iter().flat_map(|g| {
        resources
            .iter()
            .flat_map(move |r| rule.verbs.iter().map(move |v| (g, r, v)))
    }) {
        let atom = |name: Option<&String>| PolicyRule {
            api_groups: one(group),
            resources: one(resource),
            verbs: vec![verb.clone()],
            resource_names: name.map(|n| vec![n.clone()]),
            ..Default::default()
        };
        if names.is_empty() {
            out.push(atom(None));
        }
        out.extend(names.iter().map(|n| atom(Some(n))));
    }
    for (url, verb) in urls
        .iter()
        .flat_map(|u| rule.verbs.iter().map(move |v| (u, v)))
    {
        out.push(PolicyRule {
            non_resource_urls: one(url),
            verbs: vec![verb.clone()],
            ..Default::default()
        });
    }
    true
}

fn has(owner: &[String], wanted: &[String]) -> bool {
    owner.iter().any(|o| o == "*") || wanted.iter().all(|w| owner.contains(w))
}

fn resource_covers(owner: &[String], wanted: &str) -> bool {
    owner.iter().any(|o| {
        o == "*"
            || o == wanted
            || o.strip_prefix("*/")
                .is_some_and(|sub| wanted.split_once('/').is_some_and(|(_, s)| s == sub))
    })
}

fn url_covers(owner: &[String], wanted: &str) -> bool {
    owner.iter().any(|o| match o.strip_suffix('*') {
        Some(prefix) => wanted.starts_with(prefix),
        None => o == wanted,
    })
}

/// Whether one owner rule covers one atomic rule (component-helpers' `ruleCovers`).
fn rule_covers(owner: &PolicyRule, atom: &PolicyRule) -> bool {
    let (owner_names, atom_names) = (
        list(owner.resource_names.as_ref()),
        list(atom.resource_names.as_ref()),
    );
    let names_match = owner_names.is_empty()
        || (!atom_names.is_empty() && atom_names.iter().all(|n| owner_names.contains(n)));
    has(&owner.verbs, &atom.verbs)
        && has(
            list(owner.api_groups.as_ref()),
            list(atom.api_groups.as_ref()),
        )
        && list(atom.resources.as_ref())
            .iter()
            .all(|r| resource_covers(list(owner.resources.as_ref()), r))
        && list(atom.non_resource_urls.as_ref())
            .iter()
            .all(|u| url_covers(list(owner.non_resource_urls.as_ref()), u))
        && names_match
}

#[cfg(test)]
#[path = "escalation_tests.rs"]
mod tests;
