use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::rbac::v1::{PolicyRule, Subject};

use super::*;

fn strings(xs: &[&str]) -> Option<Vec<String>> {
    Some(xs.iter().map(|x| x.to_string()).collect())
}

fn resource(verb: &str, group: &str, res: &str, sub: Option<&str>, name: Option<&str>) -> Request {
    Request::Resource {
        verb: verb.into(),
        group: group.into(),
        resource: res.into(),
        subresource: sub.map(Into::into),
        namespace: Some("ns".into()),
        name: name.map(Into::into),
    }
}

#[test]
fn rules_match_verbs_groups_resources_subresources_and_names_as_kubernetes_does() {
    let rule = PolicyRule {
        api_groups: strings(&[""]),
        resources: strings(&["pods", "pods/log"]),
        verbs: vec!["get".into()],
        ..Default::default()
    };
    assert!(rule_allows(
        &rule,
        &resource("get", "", "pods", None, Some("a"))
    ));
    assert!(rule_allows(
        &rule,
        &resource("get", "", "pods", Some("log"), Some("a"))
    ));
    assert!(!rule_allows(
        &rule,
        &resource("get", "", "pods", Some("exec"), Some("a"))
    ));
    assert!(!rule_allows(
        &rule,
        &resource("list", "", "pods", None, None)
    ));
    assert!(!rule_allows(
        &rule,
        &resource("get", "apps", "pods", None, None)
    ));
    let any_status = PolicyRule {
        api_groups: strings(&["*"]),
        resources: strings(&["*/status"]),
        verbs: vec!["*".into()],
        ..Default::default()
    };
    assert!(rule_allows(
        &any_status,
        &resource("patch", "apps", "replicasets", Some("status"), None)
    ));
    assert!(!rule_allows(
        &any_status,
        &resource("patch", "apps", "replicasets", None, None)
    ));
    let named = PolicyRule {
        api_groups: strings(&[""]),
        resources: strings(&["configmaps"]),
        resource_names: strings(&["app"]),
        verbs: vec!["get".into(), "list".into()],
        ..Default::default()
    };
    assert!(rule_allows(
        &named,
        &resource("get", "", "configmaps", None, Some("app"))
    ));
    assert!(!rule_allows(
        &named,
        &resource("get", "", "configmaps", None, Some("other"))
    ));
    assert!(!rule_allows(
        &named,
        &resource("list", "", "configmaps", None, None)
    ));
    let urls = PolicyRule {
        non_resource_urls: strings(&["/apis/*", "/version"]),
        verbs: vec!["get".into()],
        ..Default::default()
    };
    let path = |p: &str| Request::NonResource {
        verb: "get".into(),
        path: p.into(),
    };
    assert!(rule_allows(&urls, &path("/apis/apps/v1")));
    assert!(rule_allows(&urls, &path("/version")));
    assert!(!rule_allows(&urls, &path("/version/x")));
    assert!(!rule_allows(&urls, &path("/metrics")));
    assert!(!rule_allows(
        &urls,
        &resource("get", "", "pods", None, None)
    ));
}

#[test]
fn subjects_name_users_groups_and_service_accounts() {
    let user = UserInfo {
        username: Some("system:serviceaccount:ns:robot".into()),
        groups: Some(crate::claims::groups("ns")),
        ..Default::default()
    };
    let s = |kind: &str, name: &str, ns: Option<&str>| Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: ns.map(Into::into),
        ..Default::default()
    };
    assert!(subject_is(
        &s("ServiceAccount", "robot", Some("ns")),
        &user,
        None
    ));
    assert!(subject_is(
        &s("ServiceAccount", "robot", None),
        &user,
        Some("ns")
    ));
    assert!(!subject_is(
        &s("ServiceAccount", "robot", None),
        &user,
        Some("other")
    ));
    assert!(!subject_is(
        &s("ServiceAccount", "robot", None),
        &user,
        None
    ));
    assert!(subject_is(
        &s("Group", "system:serviceaccounts:ns", None),
        &user,
        None
    ));
    assert!(!subject_is(
        &s("Group", "system:masters", None),
        &user,
        None
    ));
    assert!(subject_is(
        &s("User", "system:serviceaccount:ns:robot", None),
        &user,
        None
    ));
}

#[test]
fn edit_writes_and_view_reads_every_workload_the_node_serves() {
    let roles = crate::bootstrap::cluster_roles();
    let rules_of = |name: &str| {
        let r = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name));
        r.unwrap().rules.clone().unwrap_or_default()
    };
    let allows = |role: &str, req: &Request| rules_of(role).iter().any(|r| rule_allows(r, req));
    for (group, res) in [
        ("apps", "replicasets"),
        ("apps", "deployments"),
        ("batch", "jobs"),
    ] {
        assert!(
            allows("edit", &resource("create", group, res, None, None)),
            "{res}"
        );
        assert!(
            allows("view", &resource("list", group, res, None, None)),
            "{res}"
        );
        assert!(
            !allows("view", &resource("create", group, res, None, None)),
            "{res}"
        );
    }
    let scale = resource("update", "apps", "deployments", Some("scale"), Some("d"));
    assert!(allows("edit", &scale));
}
