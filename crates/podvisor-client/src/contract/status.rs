//! The contract's pods/status checks: replace, patch as the kubelet does, an IP change.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::json;

use super::{NS, pod, unique};
use crate::{Api, Client, DeleteParams, Error, Patch, PostParams};

pub(super) async fn status_subresource(client: &Client) {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let name = unique("status");
    let made = api
        .create(&PostParams::default(), pod(&name))
        .await
        .unwrap();
    let mut with_status = (*made).clone();
    with_status.status = Some(PodStatus {
        phase: Some("Running".into()),
        message: Some("contract".into()),
        ..PodStatus::default()
    });
    // kube-apiserver lets pods/status change labels and annotations, but never the spec.
    if let Some(spec) = with_status.spec.as_mut() {
        spec.containers[0].image = Some("localhost/ignored:1".into());
    }
    let written = api
        .replace_status(&PostParams::default(), with_status)
        .await
        .unwrap();
    let status = written.status.clone().unwrap_or_default();
    assert_eq!(status.message.as_deref(), Some("contract"));
    let image = |p: &Pod| p.spec.as_ref().and_then(|s| s.containers[0].image.clone());
    assert_eq!(
        image(&written),
        image(&made),
        "a status write leaves the spec alone"
    );
    let mut relabelled = (*written).clone();
    relabelled.metadata.labels = Some(BTreeMap::from([("kept".into(), "yes".into())]));
    relabelled.status = None;
    let after = api
        .replace(&PostParams::default(), relabelled)
        .await
        .unwrap();
    assert!(
        after
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("kept"))
    );
    let kept = after.status.clone().unwrap_or_default();
    assert_eq!(
        kept.message.as_deref(),
        Some("contract"),
        "a write keeps the status"
    );
    status_patches(&api, &name, &after).await;
    api.delete(
        &name,
        &DeleteParams {
            grace_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
}

/// The kubelet's status write: a strategic merge patch of pods/status naming the pod's UID
/// as a precondition; conditions merge by type, `$patch: delete` removes one, a null
/// removes a field, and another UID is refused as Invalid.
async fn status_patches(api: &Api<Pod>, name: &str, pod: &Pod) {
    let pp = PostParams::default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let cond = |t: &str| json!({"type": t, "status": "True"});
    let both = json!({"metadata": {"uid": uid}, "status": {"conditions": [cond("A"), cond("B")]}});
    api.patch_status(name, &pp, &Patch::Strategic(both))
        .await
        .unwrap();
    let less = json!({"metadata": {"uid": uid}, "status": {
        "$setElementOrder/conditions": [{"type": "B"}],
        "conditions": [{"type": "A", "$patch": "delete"}],
        "message": null}});
    let o = api
        .patch_status(name, &pp, &Patch::Strategic(less))
        .await
        .unwrap();
    let status = o.status.clone().unwrap_or_default();
    let types: Vec<_> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| &c.type_)
        .collect();
    assert_eq!(types, ["B"]);
    assert_eq!(status.message, None);
    assert_eq!(status.phase.as_deref(), Some("Running"), "the rest is kept");
    ip_change(api, name, &uid).await;
    let other = json!({"metadata": {"uid": "another"}, "status": {"message": "x"}});
    let r = api.patch_status(name, &pp, &Patch::Strategic(other)).await;
    assert!(matches!(r, Err(Error::Invalid { .. })), "{r:?}");
}

/// A pod whose IP changes, as the node's status writer says it: podIPs merge by `ip`, so
/// the old address goes with its `$patch: delete` and only the new one is kept.
async fn ip_change(api: &Api<Pod>, name: &str, uid: &str) {
    let pp = PostParams::default();
    let ip = |a: &str| json!({"ip": a});
    let first = json!({"metadata": {"uid": uid}, "status": {
        "podIP": "10.0.0.1", "podIPs": [ip("10.0.0.1")]}});
    api.patch_status(name, &pp, &Patch::Strategic(first))
        .await
        .unwrap();
    let moved = json!({"metadata": {"uid": uid}, "status": {
        "podIP": "10.0.0.2",
        "$setElementOrder/podIPs": [ip("10.0.0.2")],
        "podIPs": [ip("10.0.0.2"), {"ip": "10.0.0.1", "$patch": "delete"}]}});
    let o = api
        .patch_status(name, &pp, &Patch::Strategic(moved))
        .await
        .unwrap();
    let ips: Vec<_> = o
        .status
        .iter()
        .flat_map(|s| s.pod_ips.iter().flatten())
        .map(|p| p.ip.as_str())
        .collect();
    assert_eq!(
        ips,
        ["10.0.0.2"],
        "the old address is gone, no directive kept"
    );
}
