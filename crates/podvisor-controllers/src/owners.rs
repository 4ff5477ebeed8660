//! The reference a controller puts on what it makes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::{Metadata, Resource};

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
