//! Where each kind lives in the API.

use podvisor_core::Kind;

const RBAC: &str = "apis/rbac.authorization.k8s.io/v1";

/// The collection URL of `kind` (in `namespace` for namespaced kinds; every namespace
/// when `None`).
pub(crate) fn collection(kind: Kind, namespace: Option<&str>) -> String {
    let (group_version, plural) = match kind {
        Kind::Pod => ("api/v1", "pods"),
        Kind::Node => ("api/v1", "nodes"),
        Kind::Namespace => ("api/v1", "namespaces"),
        Kind::ConfigMap => ("api/v1", "configmaps"),
        Kind::Secret => ("api/v1", "secrets"),
        Kind::Event => ("api/v1", "events"),
        Kind::ReplicaSet => ("apis/apps/v1", "replicasets"),
        Kind::ServiceAccount => ("api/v1", "serviceaccounts"),
        Kind::Role => (RBAC, "roles"),
        Kind::RoleBinding => (RBAC, "rolebindings"),
        Kind::ClusterRole => (RBAC, "clusterroles"),
        Kind::ClusterRoleBinding => (RBAC, "clusterrolebindings"),
        Kind::Deployment => ("apis/apps/v1", "deployments"),
        Kind::Job => ("apis/batch/v1", "jobs"),
    };
    match namespace.filter(|_| kind.namespaced()) {
        Some(ns) => format!("/{group_version}/namespaces/{ns}/{plural}"),
        None => format!("/{group_version}/{plural}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_kinds_are_under_their_namespace_and_others_are_not() {
        assert_eq!(
            collection(Kind::Pod, Some("default")),
            "/api/v1/namespaces/default/pods"
        );
        assert_eq!(collection(Kind::Pod, None), "/api/v1/pods");
        assert_eq!(collection(Kind::Node, Some("default")), "/api/v1/nodes");
        assert_eq!(
            collection(Kind::ReplicaSet, Some("a")),
            "/apis/apps/v1/namespaces/a/replicasets"
        );
    }
}
