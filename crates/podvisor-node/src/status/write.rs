//! One pod's write: its status, its removal once deleted and terminated, its mirror.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use podvisor_client::{Api, Client, DeleteParams, Error, Patch, PostParams};
use podvisor_core::pod::kubelet_owns_condition;
use podvisor_core::{PodExt, Uid};
use tracing::{debug, info, warn};

use super::from_base::{FromBase, write_from};
use super::patch::status_patch;
use crate::MIRROR_ANNOTATION;

pub(super) fn pods(client: &Client, ns: &str) -> Api<Pod> {
    Api::namespaced(client.clone(), ns)
}

/// A status to write: the pod as the node was given it, the node's status for it, and
/// whether its termination completed (a deleted pod may then be removed).
#[derive(Debug, Clone)]
pub(crate) struct ToWrite {
    pub pod: Arc<Pod>,
    pub status: Arc<PodStatus>,
    pub terminated: bool,
}

/// Writes `status` on the API's pod `name` (in namespace `ns`) if it is still `uid`,
/// as the kubelet's status manager does: read, then a strategic merge patch of what
/// differs, the UID its precondition. The pod as it is after the write (or as it was,
/// when nothing changed), or `None` when it is gone or another incarnation.
pub(crate) async fn write_status(
    client: &Client,
    (ns, status): (&str, Option<&PodStatus>),
    uid: &str,
    name: &str,
) -> Result<Option<Arc<Pod>>, Error> {
    let api = pods(client, ns);
    let Some(current) = incarnation(&api, name, uid).await? else {
        return Ok(None);
    };
    let status = merged(status, current.status.as_ref());
    if current.status.as_ref() == Some(&status) {
        return Ok(Some(current));
    }
    let patch = Patch::Strategic(status_patch(uid, current.status.as_ref(), &status));
    match api.patch_status(name, &PostParams::default(), &patch).await {
        Ok(o) => Ok(Some(o)),
        Err(Error::NotFound { .. }) => Ok(None),
        // The UID precondition: another pod of the name came between read and write.
        Err(e @ Error::Invalid { .. }) => match incarnation(&api, name, uid).await? {
            Some(_) => Err(e),
            None => Ok(None),
        },
        Err(e) => Err(e),
    }
}

/// The API's pod `name` if it is the incarnation `uid`.
///
/// A cluster's Node authorizer answers Forbidden for a pod it does not know bound to the
/// node: one deleted or bound elsewhere, but also one just made, for as long as its graph
/// (fed by an informer) lags. So Forbidden is an error, retried as the kubelet's status
/// manager retries every failed read but NotFound; the caller that knows the pod is gone
/// from the cluster (`uplink`, for a pod the node finished) takes it for gone.
async fn incarnation(api: &Api<Pod>, name: &str, uid: &str) -> Result<Option<Arc<Pod>>, Error> {
    let current = api.get_opt(name).await?;
    Ok(current.filter(|c| c.metadata.uid.as_deref() == Some(uid)))
}

/// The node's status for the pod, with the stored conditions it does not own.
pub(crate) fn merged(ours: Option<&PodStatus>, stored: Option<&PodStatus>) -> PodStatus {
    let mut status = ours.cloned().unwrap_or_default();
    let theirs: Vec<PodCondition> = stored
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| !kubelet_owns_condition(&c.type_))
        .cloned()
        .collect();
    if !theirs.is_empty() {
        status
            .conditions
            .get_or_insert_with(Vec::new)
            .extend(theirs);
    }
    status
}

async fn delete(client: &Client, ns: &str, name: &str, uid: &str) -> Result<(), Error> {
    match pods(client, ns)
        .delete(name, &DeleteParams::now_if_uid(uid))
        .await
    {
        Ok(_) | Err(Error::NotFound { .. } | Error::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A static pod's mirror, once its status is written: its UID and the version that holds
/// the status.
pub(super) type Mirror = Option<(Uid, String)>;

/// What one write left: a static pod's mirror; an API pod's status as the API holds it
/// after the write, which the next write of that pod patches from. When the API holds
/// just what was written (no condition of another writer), the base is the status
/// manager's own `Arc`, not a copy of it.
pub(super) struct Written {
    pub mirror: Mirror,
    pub base: Option<Arc<PodStatus>>,
}

/// What one published status leads to. `Err` when the API refused or failed (logged here).
/// `clients`: the API of pods' statuses, and the API of mirrors; `base`: what the last
/// write of this pod left in the API, if known.
pub(super) async fn write(
    (client, mirrors): &(Client, Client),
    to_write: &ToWrite,
    base: Option<Arc<PodStatus>>,
) -> Result<Written, ()> {
    let pod = to_write.pod.as_ref();
    let r = if pod.is_static() {
        mirror(mirrors, (pod, &to_write.status))
            .await
            .map(|mirror| Written { mirror, base: None })
    } else {
        let base = api_pod(client, to_write, base).await;
        base.map(|base| Written { mirror: None, base })
    };
    r.map_err(|e| warn!(pod = pod.name(), error = %e, "status not written to the API"))
}

/// An API pod's status written: from `base` while the pod runs, else after a read (a
/// terminated pod's removal depends on whether the API's copy is marked for deletion).
/// The new base.
async fn api_pod(
    client: &Client,
    to_write: &ToWrite,
    base: Option<Arc<PodStatus>>,
) -> Result<Option<Arc<PodStatus>>, Error> {
    let (pod, terminated) = (to_write.pod.as_ref(), to_write.terminated);
    let status = to_write.status.as_ref();
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    if let (false, Some(base)) = (terminated, base) {
        match write_from(client, (pod, status), uid, &base).await? {
            FromBase::Unchanged => return Ok(Some(base)),
            FromBase::Written(stored) => return Ok(as_base(to_write, &stored)),
            FromBase::Gone => return Ok(None),
            FromBase::Refused => {}
        }
    }
    let Some(stored) =
        write_status(client, (pod.namespace(), Some(status)), uid, pod.name()).await?
    else {
        return Ok(None);
    };
    if terminated && stored.metadata.deletion_timestamp.is_some() {
        info!(
            pod = pod.name(),
            pod_uid = uid,
            "pod terminated; removing it from the API"
        );
        delete(client, pod.namespace(), pod.name(), uid).await?;
    }
    Ok(as_base(to_write, &stored))
}

/// The stored pod's status as the next write's base: the status written itself when the
/// API holds just that (one copy per pod between the status manager and the writer).
fn as_base(to_write: &ToWrite, stored: &Pod) -> Option<Arc<PodStatus>> {
    let status = stored.status.as_ref()?;
    if *status == *to_write.status {
        return Some(to_write.status.clone());
    }
    Some(Arc::new(status.clone()))
}

/// The static pod's UID a mirror names.
pub(crate) fn mirror_of(p: &Pod) -> Option<&str> {
    let annotations = p.metadata.annotations.as_ref()?;
    annotations.get(MIRROR_ANNOTATION).map(String::as_str)
}

/// The mirror pod's body: the static pod's spec and labels, marked as a mirror, and
/// controlled by its node, as the kubelet makes it: no controller can adopt it, and it
/// goes with its Node.
fn mirror_body(pod: &Pod, node: &Node) -> Pod {
    let mut m = pod.clone();
    m.status = None;
    let meta = &mut m.metadata;
    let static_uid = meta.uid.take().unwrap_or_default();
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(MIRROR_ANNOTATION.into(), static_uid);
    meta.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.metadata.name.clone().unwrap_or_default(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    m
}

/// Makes the mirror; the node must be registered first (its UID is the owner's).
async fn create_mirror(client: &Client, pod: &Pod) -> Result<Option<Uid>, Error> {
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get(node_name.unwrap_or_default()).await?;
    let body = mirror_body(pod, &node);
    match pods(client, pod.namespace())
        .create(&PostParams::default(), body)
        .await
    {
        Ok(o) => {
            let uid = o.metadata.uid.clone().unwrap_or_default();
            debug!(pod = pod.name(), mirror_uid = %uid, "mirror pod created");
            Ok(Some(Uid::from(uid.as_str())))
        }
        Err(Error::AlreadyExists { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the API's pod must be made again as `pod`'s mirror: deleted through the API,
/// a mirror of another static pod, or made before mirrors had their node as owner.
fn outdated(current: &Pod, static_uid: &str) -> bool {
    mirror_of(current) != Some(static_uid)
        || current.metadata.deletion_timestamp.is_some()
        || current.metadata.owner_references.is_none()
}

/// The API's pod of the mirror's name. A cluster's Node authorizer lets a node read only
/// pods bound to it, so there a name nobody holds answers Forbidden, not NotFound: both
/// mean no mirror.
async fn mirror_get(client: &Client, pod: &Pod) -> Result<Option<Arc<Pod>>, Error> {
    match pods(client, pod.namespace()).get_opt(pod.name()).await {
        Err(Error::Forbidden { .. }) => Ok(None),
        r => r,
    }
}

/// Makes the mirror exist, current, and not marked for deletion; writes its status (a
/// mirror just made gets it at once: waiting for the pod's next change could leave it
/// bare for as long as the pod does not change). Answers the mirror's UID and version.
async fn mirror(client: &Client, (pod, status): (&Pod, &PodStatus)) -> Result<Mirror, Error> {
    let static_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let made = match mirror_get(client, pod).await? {
        None => create_mirror(client, pod).await?,
        // An API pod of the same name: not ours to touch.
        Some(current) if mirror_of(&current).is_none() => return Ok(None),
        Some(current) if outdated(&current, static_uid) => {
            info!(
                pod = pod.name(),
                "mirror pod outdated or deleted through the API; making it again"
            );
            let uid = current.metadata.uid.as_deref().unwrap_or_default();
            delete(client, pod.namespace(), pod.name(), uid).await?;
            create_mirror(client, pod).await?
        }
        Some(current) => Some(Uid::from(
            current.metadata.uid.as_deref().unwrap_or_default(),
        )),
    };
    let Some(mirror_uid) = made else {
        return Ok(None);
    };
    let written = write_status(
        client,
        (pod.namespace(), Some(status)),
        &mirror_uid,
        pod.name(),
    )
    .await?;
    let version = written.and_then(|o| o.metadata.resource_version.clone());
    Ok(version.map(|v| (mirror_uid, v)))
}

/// Whether pod `name`'s mirror is still the object at `version` (nobody deleted or
/// changed it since its status was written).
pub(super) async fn mirror_unchanged(client: &Client, ns: &str, name: &str, version: &str) -> bool {
    pods(client, ns)
        .get(name)
        .await
        .is_ok_and(|o| o.metadata.resource_version.as_deref() == Some(version))
}

/// The static pod is gone for good: so is its mirror.
pub(super) async fn remove_mirror(client: &Client, pod: &Pod) {
    let static_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let Ok(Some(current)) = pods(client, pod.namespace()).get_opt(pod.name()).await else {
        return;
    };
    if mirror_of(&current) != Some(static_uid) {
        return;
    }
    let uid = current.metadata.uid.as_deref().unwrap_or_default();
    if let Err(e) = delete(client, pod.namespace(), pod.name(), uid).await {
        warn!(pod = pod.name(), error = %e, "mirror pod not removed");
    }
}

#[cfg(test)]
pub(super) mod tests {
    use podvisor_actors::ChildSpec;
    use podvisor_actors::testing::paused_system;
    use podvisor_store::{LocalClient, StoreActor, StoreConfig};
    use serde_json::json;

    use super::*;

    fn status(status: serde_json::Value) -> PodStatus {
        serde_json::from_value(status).unwrap()
    }

    /// Against a real store: the patch leaves what another writer added, removes what
    /// the node no longer reports, and does nothing to a new pod of the same name.
    /// A client of a real store of its own, in a directory named after `tag`.
    pub(in crate::status) fn store_client(tag: &str) -> Client {
        let dir = std::env::temp_dir().join(format!("podvisor-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("s.redb");
        let store = ChildSpec::of(move || {
            let cfg = StoreConfig {
                path: path.clone(),
                window: 100,
            };
            StoreActor::new(cfg, 64)
        })
        .start_unsupervised();
        LocalClient::client(&store)
    }

    #[test]
    fn statuses_are_patched_by_uid_and_keep_what_others_wrote() {
        paused_system().block_on(async {
            let client = store_client("patch");
            let api: Api<Pod> = Api::namespaced(client.clone(), "default");
            let body: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}))
            .unwrap();
            let pod = api.create(&PostParams::default(), body.clone()).await.unwrap();
            let uid = pod.metadata.uid.clone().unwrap();
            let first = status(json!({"phase": "Pending", "message": "pulling",
                "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}));
            write_status(&client, ("default", Some(&first)), &uid, "p").await.unwrap().unwrap();
            let other = json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}});
            api.patch_status("p", &PostParams::default(), &Patch::Strategic(other))
                .await
                .unwrap();
            let second = status(json!({"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}));
            let stored = write_status(&client, ("default", Some(&second)), &uid, "p").await.unwrap().unwrap();
            let s = stored.status.clone().unwrap();
            assert_eq!((s.phase.as_deref(), s.message), (Some("Running"), None));
            let conditions: Vec<_> = s.conditions.unwrap().into_iter()
                .map(|c| (c.type_, c.status, c.reason)).collect();
            assert_eq!(conditions, [
                ("Ready".to_string(), "True".to_string(), None),
                ("DisruptionTarget".to_string(), "True".to_string(), None)]);

            api.delete("p", &DeleteParams::now_if_uid(&uid)).await.unwrap();
            let again = api.create(&PostParams::default(), body).await.unwrap();
            assert_eq!(write_status(&client, ("default", Some(&first)), &uid, "p").await.unwrap(), None);
            let untouched = api.get("p").await.unwrap();
            assert_eq!(untouched.status, again.status);
        });
    }

    #[test]
    fn conditions_the_kubelet_does_not_own_survive_its_writes() {
        let ours: PodStatus = serde_json::from_value(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}))
        .unwrap();
        let stored: PodStatus = serde_json::from_value(json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}]}))
        .unwrap();
        let v = merged(Some(&ours), Some(&stored));
        let types: Vec<(&str, &str)> = v
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(types, [("Ready", "True"), ("DisruptionTarget", "True")]);
    }
}
