//! In a cluster, the node's own API is a view: its pods, ReplicaSets and Node are copies
//! of the cluster's (the node's cluster replica keeps them, without admission), so a
//! create or replace of one through the node's API is refused with where to make it
//! instead. Deployments and Jobs are refused too: the control plane's controllers run
//! them, the node's are off. Status writes (the node's own) are not admitted, so they pass; a delete is the
//! node's to make (as `crictl` could stop a pod), and goes up to the cluster.

use podvisor_client::{AnyObject, Error, Subresource};
use podvisor_core::Kind;
use podvisor_store::{Admission, Objects, Resource, StoredObject};

pub struct ClusterOwned {
    /// How the refusal names the cluster (the kubeconfig the node joined with).
    pub cluster: String,
}

impl Admission for ClusterOwned {
    fn admit(
        &self,
        _: &dyn Objects,
        res: &Resource,
        object: &mut AnyObject,
        _: Option<&StoredObject>,
        _: Subresource,
    ) -> Result<(), Error> {
        let owned = [
            Kind::Pod,
            Kind::ReplicaSet,
            Kind::Node,
            Kind::Deployment,
            Kind::Job,
        ];
        if !owned.contains(&res.kind) {
            return Ok(());
        }
        Err(Error::Forbidden {
            resource: res.qualified(),
            name: object.name().to_string(),
            cause: "ClusterOwned".into(),
            message: format!(
                "this node is part of a cluster ({}): its {} are the cluster's; write them there",
                self.cluster, res.plural
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    struct Nothing;
    impl Objects for Nothing {
        fn get(&self, _: Kind, _: &str, _: &str) -> Option<std::sync::Arc<StoredObject>> {
            None
        }
        fn select(&self, _: &podvisor_store::Selector) -> Vec<std::sync::Arc<StoredObject>> {
            Vec::new()
        }
    }

    #[test]
    fn the_cluster_s_kinds_are_refused_and_the_node_s_own_pass() {
        let owned = ClusterOwned {
            cluster: "/etc/podvisor/bootstrap.kubeconfig".into(),
        };
        let mut pod = AnyObject::new(Pod::default());
        let e = owned
            .admit(
                &Nothing,
                &Resource::of(Kind::Pod),
                &mut pod,
                None,
                Subresource::Main,
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("part of a cluster (/etc/podvisor/bootstrap.kubeconfig)"),
            "{e}"
        );
        for kind in [Kind::Deployment, Kind::Job] {
            let mut o = AnyObject::decode(kind, serde_json::json!({})).unwrap();
            let e = owned.admit(
                &Nothing,
                &Resource::of(kind),
                &mut o,
                None,
                Subresource::Main,
            );
            assert!(
                e.is_err(),
                "{kind}: the control plane's controllers run these"
            );
        }
        let mut cm = AnyObject::new(ConfigMap::default());
        assert!(
            owned
                .admit(
                    &Nothing,
                    &Resource::of(Kind::ConfigMap),
                    &mut cm,
                    None,
                    Subresource::Main
                )
                .is_ok()
        );
    }
}
