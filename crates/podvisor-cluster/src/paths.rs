//! Where each kind lives in the API.

use podvisor_core::Kind;

/// The collection URL of `kind` (in `namespace` for namespaced kinds; every namespace
/// when `None`), from the kind's group, version and plural.
pub(crate) fn collection(kind: Kind, namespace: Option<&str>) -> String {
    let root = match kind.group() {
        "" => format!("api/{}", kind.version()),
        group => format!("apis/{group}/{}", kind.version()),
    };
    let plural = kind.plural();
    match namespace.filter(|_| kind.namespaced()) {
        Some(ns) => format!("/{root}/namespaces/{ns}/{plural}"),
        None => format!("/{root}/{plural}"),
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
        assert_eq!(
            collection(Kind::ClusterRoleBinding, Some("a")),
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        );
    }
}
