//! RBAC as kube-apiserver's authorizer decides it: a request is allowed when some
//! ClusterRoleBinding, or some RoleBinding of the request's namespace, names the caller
//! (as a user, one of its groups, or its service account) and the role it refers to has a
//! rule covering the request. Nothing is denied explicitly; no rule is a refusal.

use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use podvisor_client::{Api, Client, ListParams};

use crate::error::AuthError;

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Resource {
        verb: String,
        group: String,
        resource: String,
        subresource: Option<String>,
        namespace: Option<String>,
        name: Option<String>,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

impl Request {
    fn namespace(&self) -> Option<&str> {
        match self {
            Request::Resource { namespace, .. } => namespace.as_deref(),
            Request::NonResource { .. } => None,
        }
    }

    /// Why it is refused, in kube-apiserver's words.
    pub fn refusal(&self, user: &UserInfo) -> String {
        let who = user.username.as_deref().unwrap_or_default();
        match self {
            Request::Resource {
                verb,
                group,
                resource,
                subresource,
                namespace,
                ..
            } => {
                let what = match subresource {
                    Some(s) => format!("{resource}/{s}"),
                    None => resource.clone(),
                };
                let scope = match namespace {
                    Some(ns) => format!("in the namespace {ns:?}"),
                    None => "at the cluster scope".into(),
                };
                format!(
                    "User {who:?} cannot {verb} resource {what:?} in API group {group:?} {scope}"
                )
            }
            Request::NonResource { verb, path } => {
                format!("User {who:?} cannot {verb} path {path:?}")
            }
        }
    }
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|x| x == "*" || x == wanted)
}

fn resource_matches(rule: &PolicyRule, resource: &str, sub: Option<&str>) -> bool {
    let resources = rule.resources.as_deref().unwrap_or(&[]);
    let combined = match sub {
        Some(s) => format!("{resource}/{s}"),
        None => resource.to_string(),
    };
    resources
        .iter()
        .any(|r| r == "*" || *r == combined || sub.is_some_and(|s| r.strip_prefix("*/") == Some(s)))
}

fn name_matches(rule: &PolicyRule, name: Option<&str>) -> bool {
    match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => name.is_some_and(|n| names.iter().any(|x| x == n)),
    }
}

fn path_matches(rule: &PolicyRule, path: &str) -> bool {
    let urls = rule.non_resource_urls.as_deref().unwrap_or(&[]);
    urls.iter().any(|u| match u.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => u == path,
    })
}

/// Whether one rule covers the request.
pub fn rule_allows(rule: &PolicyRule, req: &Request) -> bool {
    match req {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            has(&rule.verbs, verb)
                && has(rule.api_groups.as_deref().unwrap_or(&[]), group)
                && resource_matches(rule, resource, subresource.as_deref())
                && name_matches(rule, name.as_deref())
        }
        Request::NonResource { verb, path } => has(&rule.verbs, verb) && path_matches(rule, path),
    }
}

/// Whether a binding's subject is the caller (`namespace`: the RoleBinding's, the default
/// of a ServiceAccount subject without one).
pub fn subject_is(s: &Subject, user: &UserInfo, namespace: Option<&str>) -> bool {
    let name = user.username.as_deref().unwrap_or_default();
    match s.kind.as_str() {
        "User" => s.name == name,
        "Group" => user.groups.as_deref().unwrap_or(&[]).contains(&s.name),
        "ServiceAccount" => {
            let ns = s.namespace.as_deref().or(namespace).unwrap_or_default();
            crate::claims::username(ns, &s.name) == name
        }
        _ => false,
    }
}

fn names(subjects: Option<&Vec<Subject>>, user: &UserInfo, ns: Option<&str>) -> bool {
    subjects.is_some_and(|list| list.iter().any(|s| subject_is(s, user, ns)))
}

/// The rules of the role `r` names, for a binding in `ns` (none when it does not exist).
pub async fn role_rules(
    client: &Client,
    r: &RoleRef,
    ns: Option<&str>,
) -> Result<Vec<PolicyRule>, AuthError> {
    rules(client, r, ns).await
}

/// Every rule the caller holds in `ns` (`None`: at the cluster scope), from its
/// ClusterRoleBindings and the namespace's RoleBindings.
pub async fn user_rules(
    client: &Client,
    user: &UserInfo,
    ns: Option<&str>,
) -> Result<Vec<PolicyRule>, AuthError> {
    let all = ListParams::default();
    let mut held = Vec::new();
    let cluster = Api::<ClusterRoleBinding>::all(client.clone())
        .list(&all)
        .await?;
    for b in cluster
        .items
        .iter()
        .filter(|b| names(b.subjects.as_ref(), user, None))
    {
        held.extend(rules(client, &b.role_ref, None).await?);
    }
    if let Some(ns) = ns {
        let local = Api::<RoleBinding>::namespaced(client.clone(), ns)
            .list(&all)
            .await?;
        for b in local
            .items
            .iter()
            .filter(|b| names(b.subjects.as_ref(), user, Some(ns)))
        {
            held.extend(rules(client, &b.role_ref, Some(ns)).await?);
        }
    }
    Ok(held)
}

/// The rules of the role a binding refers to (none when it does not exist).
async fn rules(
    client: &Client,
    r: &RoleRef,
    ns: Option<&str>,
) -> Result<Vec<PolicyRule>, AuthError> {
    let rules = match (r.kind.as_str(), ns) {
        ("ClusterRole", _) => Api::<ClusterRole>::all(client.clone())
            .get_opt(&r.name)
            .await?
            .and_then(|c| c.rules.clone()),
        ("Role", Some(ns)) => Api::<Role>::namespaced(client.clone(), ns)
            .get_opt(&r.name)
            .await?
            .and_then(|c| c.rules.clone()),
        _ => None,
    };
    Ok(rules.unwrap_or_default())
}

/// Whether the caller may do what it asks, by the store's Roles and bindings.
pub async fn authorize(client: &Client, user: &UserInfo, req: &Request) -> Result<bool, AuthError> {
    let all = ListParams::default();
    let cluster = Api::<ClusterRoleBinding>::all(client.clone())
        .list(&all)
        .await?;
    for b in cluster
        .items
        .iter()
        .filter(|b| names(b.subjects.as_ref(), user, None))
    {
        if rules(client, &b.role_ref, None)
            .await?
            .iter()
            .any(|r| rule_allows(r, req))
        {
            return Ok(true);
        }
    }
    let Some(ns) = req.namespace() else {
        return Ok(false);
    };
    let local = Api::<RoleBinding>::namespaced(client.clone(), ns)
        .list(&all)
        .await?;
    for b in local
        .items
        .iter()
        .filter(|b| names(b.subjects.as_ref(), user, Some(ns)))
    {
        if rules(client, &b.role_ref, Some(ns))
            .await?
            .iter()
            .any(|r| rule_allows(r, req))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
