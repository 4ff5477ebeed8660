use super::*;

fn strings(xs: &[&str]) -> Option<Vec<String>> {
    Some(xs.iter().map(|x| x.to_string()).collect())
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: strings(groups),
        resources: strings(resources),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        resource_names: (!names.is_empty()).then(|| strings(names).unwrap_or_default()),
        ..Default::default()
    }
}

#[test]
fn an_owner_covers_what_it_holds_and_not_more() {
    let owner = [
        rule(&[""], &["pods", "pods/log"], &["get", "list"], &[]),
        rule(&["apps"], &["*/scale"], &["update"], &[]),
        rule(&[""], &["configmaps"], &["get"], &["a", "b"]),
    ];
    let covered = [
        rule(&[""], &["pods"], &["get"], &[]),
        rule(&[""], &["pods/log"], &["list"], &["x"]),
        rule(&["apps"], &["deployments/scale"], &["update"], &[]),
        rule(&[""], &["configmaps"], &["get"], &["b"]),
    ];
    assert!(covers(&owner, &covered));
    for more in [
        rule(&[""], &["pods"], &["delete"], &[]),
        rule(&[""], &["pods/exec"], &["get"], &[]),
        rule(&["apps"], &["deployments"], &["update"], &[]),
        rule(&[""], &["configmaps"], &["get"], &[]),
        rule(&[""], &["configmaps"], &["get"], &["c"]),
        rule(&[""], &["pods"], &["*"], &[]),
        rule(&["*"], &["pods"], &["get"], &[]),
    ] {
        assert!(!covers(&owner, std::slice::from_ref(&more)), "{more:?}");
    }
    let admin = [rule(&["*"], &["*"], &["*"], &[])];
    assert!(covers(&admin, &owner));
}

#[test]
fn non_resource_urls_are_covered_by_prefix() {
    let owner = [PolicyRule {
        non_resource_urls: strings(&["/healthz", "/apis/*"]),
        verbs: vec!["get".into()],
        ..Default::default()
    }];
    let asked = |url: &str| PolicyRule {
        non_resource_urls: strings(&[url]),
        verbs: vec!["get".into()],
        ..Default::default()
    };
    assert!(covers(&owner, &[asked("/healthz"), asked("/apis/apps")]));
    assert!(!covers(&owner, &[asked("/metrics")]));
}

#[test]
fn a_role_too_large_to_compare_is_not_covered() {
    let verbs: Vec<String> = (0..200).map(|i| format!("v{i}")).collect();
    let big = PolicyRule {
        api_groups: strings(&["*"]),
        resources: Some((0..100).map(|i| format!("r{i}")).collect()),
        verbs,
        ..Default::default()
    };
    let admin = [rule(&["*"], &["*"], &["*"], &[])];
    assert!(!covers(&admin, &[big]));
}

#[test]
fn binding_a_cluster_role_asks_bind_on_that_cluster_role() {
    let role = RoleRef {
        api_group: Some(RBAC.into()),
        kind: "ClusterRole".into(),
        name: "cluster-admin".into(),
    };
    assert_eq!(
        bind_request(&role, Some("ns")),
        Request::Resource {
            verb: "bind".into(),
            group: RBAC.into(),
            resource: "clusterroles".into(),
            subresource: None,
            namespace: Some("ns".into()),
            name: Some("cluster-admin".into()),
        }
    );
}
