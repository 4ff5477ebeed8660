//! The node's admission of a pod the cluster binds to it, at the moment its first copy is
//! made: what podvisor cannot honour (`validate_pod`), then placement
//! (`podvisor_core::node_admit`: node affinity, host ports, NoExecute taints; the sync
//! loop's own admission does resources). A pod that fails is copied as Failed with
//! the kubelet's reason and message, so the kubelet never runs it and the uplink tells
//! the cluster why, as a kubelet's rejection does.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodStatus};
use podvisor_client::{Api, Client, Error};
use podvisor_core::fit::Rejection;
use podvisor_core::node_admit;
use podvisor_core::validation::validate_pod;

use crate::source::bound_to;

/// Whether a copy of `p` would be new: no copy of this incarnation yet.
async fn is_new(local: &Client, p: &Pod) -> Result<bool, Error> {
    let m = &p.metadata;
    let api: Api<Pod> = Api::namespaced(local.clone(), m.namespace.as_deref().unwrap_or_default());
    let held = api.get_opt(m.name.as_deref().unwrap_or_default()).await?;
    Ok(held.is_none_or(|h| h.metadata.uid != m.uid))
}

/// Whether `p` is a pod the node finished and removed from its store while the cluster
/// deletes it: finished, deleting, and no copy of this incarnation held.
pub(crate) async fn finished_and_removed(local: &Client, p: &Pod) -> Result<bool, Error> {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    let finished = matches!(phase, Some("Succeeded" | "Failed"));
    Ok(finished && p.metadata.deletion_timestamp.is_some() && is_new(local, p).await?)
}

fn settled(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    p.metadata.deletion_timestamp.is_some() || matches!(phase, Some("Succeeded" | "Failed"))
}

/// What the node checks of a pod the cluster binds to it: first what it cannot honour
/// (the same `validate_pod` as the manifest directory's and the node's API: kube-apiserver
/// admitted fields podvisor does not run, and running without them would ignore them
/// silently), then placement.
fn checks(p: &Pod, node: &Node, active: &[&Pod]) -> Result<(), Rejection> {
    if let Err(errors) = validate_pod(p) {
        return Err(Rejection {
            reason: "UnsupportedPodSpec",
            message: format!("Pod was rejected: podvisor cannot run it as specified: {errors}"),
        });
    }
    node_admit::admit(p, node, active)
}

/// The copy to keep of a cluster's pod.
pub(crate) struct Copied {
    /// The cluster's pod itself, or Failed when the node turns it away.
    pub pod: Arc<Pod>,
    /// The first copy of this incarnation, its status the cluster's as is.
    pub first: bool,
}

/// The copy to keep of the cluster's pod `p` (see `Copied`).
pub(crate) async fn copy(local: &Client, node: &str, p: Arc<Pod>) -> Result<Copied, Error> {
    let as_is = |pod, first| Ok(Copied { pod, first });
    if settled(&p) || !is_new(local, &p).await? {
        return as_is(p, false);
    }
    let Some(me) = Api::<Node>::all(local.clone()).get_opt(node).await? else {
        return as_is(p, true); // no copy of the Node yet: the sync loop still checks resources
    };
    // The other pods matter only to host ports: read them only then (a burst of copies
    // would otherwise read every pod once per copy).
    let others = if node_admit::wants_host_ports(&p) {
        Api::<Pod>::all(local.clone())
            .list(&bound_to(node))
            .await?
            .items
    } else {
        Vec::new()
    };
    let active: Vec<&Pod> = others
        .iter()
        .filter(|o| !settled(o))
        .map(|o| &**o)
        .collect();
    let Err(rejection) = checks(&p, &me, &active) else {
        return as_is(p, true);
    };
    tracing::info!(
        pod = p.metadata.name.as_deref().unwrap_or_default(),
        reason = rejection.reason,
        "pod rejected by the node"
    );
    let mut failed = (*p).clone();
    failed.status = Some(PodStatus {
        phase: Some("Failed".into()),
        reason: Some(rejection.reason.into()),
        message: Some(rejection.message),
        ..failed.status.unwrap_or_default()
    });
    as_is(Arc::new(failed), false)
}
