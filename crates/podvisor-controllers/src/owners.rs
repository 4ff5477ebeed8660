//! The reference a controller puts on what it makes, and the Events of making them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::{Metadata, Resource};
use podvisor_core::ObjectKey;
use podvisor_machinery::controller::{Effects, Event};

/// `owner` as the controller of what it makes, with `blockOwnerDeletion`, as Kubernetes'
/// controllers set it (a foreground deletion of the owner waits for these).
pub(crate) fn controller_ref<K>(owner: &K) -> OwnerReference
where
    K: Resource + Metadata<Ty = ObjectMeta>,
{
    let meta = owner.metadata();
    OwnerReference {
        api_version: K::API_VERSION.into(),
        kind: K::KIND.into(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The Events of a sync's pod writes, as kube-controller-manager's ReplicaSet and Job
/// controllers record them on their object.
pub(crate) fn pod_events(
    fx: &mut Effects,
    key: &ObjectKey,
    created: &[String],
    deleted: &[String],
) {
    for name in created {
        fx.event(
            key,
            Event::normal("SuccessfulCreate", format!("Created pod: {name}")),
        );
    }
    for name in deleted {
        fx.event(
            key,
            Event::normal("SuccessfulDelete", format!("Deleted pod: {name}")),
        );
    }
}
