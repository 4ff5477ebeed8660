//! A pod's status written from what the node's own last write left in the API (the base):
//! one patch and no read, as the cluster uplink writes. The read before every write was a
//! request and a decode of the whole pod each time; the base is the status as the API
//! answered the last write (conditions of other writers included, so the patch keeps
//! them). A write the API refuses from that base (the UID precondition: another
//! incarnation; or a status it will not take) is made again as `write_status` makes it,
//! after a read.
//!
//! What another writer changes in a field the node owns, between two of its writes, stays
//! until the node's own value for that field changes: the kubelet reads before each write
//! and would overwrite it at its next one.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podvisor_client::{Client, Error, Patch, PostParams};
use podvisor_core::PodExt;

use super::patch::status_patch;
use super::write::{merged, pods};

/// What a write from the base came to.
pub(super) enum FromBase {
    /// The node's status is what the base holds already: nothing was sent.
    Unchanged,
    /// The API's pod after the write.
    Written(Arc<Pod>),
    /// The pod is gone from the API.
    Gone,
    /// Refused from this base: read, and write again.
    Refused,
}

/// `status` of `pod` (incarnation `uid`) patched from `base`.
pub(super) async fn write_from(
    client: &Client,
    (pod, status): (&Pod, &PodStatus),
    uid: &str,
    base: &PodStatus,
) -> Result<FromBase, Error> {
    let status = merged(Some(status), Some(base));
    if *base == status {
        return Ok(FromBase::Unchanged);
    }
    let patch = Patch::Strategic(status_patch(uid, Some(base), &status));
    let api = pods(client, pod.namespace());
    match api
        .patch_status(pod.name(), &PostParams::default(), &patch)
        .await
    {
        Ok(o) => Ok(FromBase::Written(o)),
        Err(Error::NotFound { .. }) => Ok(FromBase::Gone),
        Err(Error::Invalid { .. }) => Ok(FromBase::Refused),
        Err(e) => Err(e),
    }
}
