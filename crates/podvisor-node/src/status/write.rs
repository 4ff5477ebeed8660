//! One pod's write: its status, its removal once deleted and terminated, its mirror.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use podvisor_actors::Recipient;
use podvisor_core::{Kind, PodExt, Uid};
use podvisor_store::actor::{Create, Delete, Get, Update};
use podvisor_store::{DeleteOptions, Resource, StoreError, StoredObject, WriteOptions};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use crate::MIRROR_ANNOTATION;

#[derive(Clone)]
pub struct StoreHandles {
    pub(super) get: Recipient<Get>,
    pub(super) create: Recipient<Create>,
    pub(super) update: Recipient<Update>,
    pub(super) delete: Recipient<Delete>,
}

const ATTEMPTS: usize = 3;

fn pods() -> Resource {
    Resource::of(Kind::Pod)
}

async fn get(store: &StoreHandles, ns: &str, name: &str) -> Result<Arc<StoredObject>, StoreError> {
    get_kind(store, Kind::Pod, ns, name).await
}

async fn get_kind(
    store: &StoreHandles,
    kind: Kind,
    ns: &str,
    name: &str,
) -> Result<Arc<StoredObject>, StoreError> {
    let msg = Get {
        kind,
        namespace: ns.into(),
        name: name.into(),
    };
    store
        .get
        .send(msg)
        .await
        .map_err(|e| StoreError::Db(e.to_string()))?
}

/// Writes `status` on the stored pod if it is still `uid`; retries on conflicts.
async fn write_status(
    store: &StoreHandles,
    pod: &Pod,
    uid: &str,
    name_ns: (&str, &str),
) -> Result<Option<Arc<StoredObject>>, StoreError> {
    for _ in 0..ATTEMPTS {
        let current = match get(store, name_ns.1, name_ns.0).await {
            Ok(c) => c,
            Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        if &*current.uid != uid {
            return Ok(None);
        }
        let mut body = current.value();
        let status = merged(&pod.status, &body["status"]);
        if body["status"] == status {
            return Ok(Some(current));
        }
        body["status"] = status;
        let msg = Update {
            resource: pods(),
            body,
            status_only: true,
            opts: WriteOptions::default(),
        };
        match store
            .update
            .send(msg)
            .await
            .map_err(|e| StoreError::Db(e.to_string()))?
        {
            Ok(o) => return Ok(Some(o)),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Db("the pod kept changing".into()))
}

/// The conditions the kubelet computes; the others (`DisruptionTarget` from the taint
/// eviction scheduler, a controller's own) are kept from the stored status, as the
/// kubelet's status manager keeps them.
const KUBELET_CONDITIONS: [&str; 5] = [
    "PodScheduled",
    "Ready",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
];

/// The node's status for the pod, with the stored conditions it does not own.
fn merged(ours: &Option<k8s_openapi::api::core::v1::PodStatus>, stored: &Value) -> Value {
    let mut status = serde_json::to_value(ours).unwrap_or(Value::Null);
    let theirs: Vec<Value> = stored["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| {
            let t = c["type"].as_str().unwrap_or_default();
            !KUBELET_CONDITIONS.contains(&t)
        })
        .cloned()
        .collect();
    if theirs.is_empty() || !status.is_object() {
        return status;
    }
    let conditions = status["conditions"].as_array_mut();
    match conditions {
        Some(c) => c.extend(theirs),
        None => status["conditions"] = Value::Array(theirs),
    }
    status
}

async fn delete(store: &StoreHandles, ns: &str, name: &str, uid: &str) -> Result<(), StoreError> {
    let msg = Delete {
        resource: pods(),
        namespace: ns.into(),
        name: name.into(),
        opts: DeleteOptions::now_if_uid(uid),
    };
    match store
        .delete
        .send(msg)
        .await
        .map_err(|e| StoreError::Db(e.to_string()))?
    {
        Ok(_) | Err(StoreError::NotFound { .. } | StoreError::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A static pod's mirror, once its status is written: its UID and the revision that
/// holds the status.
pub(super) type Mirror = Option<(Uid, u64)>;

/// What one published status leads to: for a static pod, its mirror. `Err` when the
/// store refused or failed (logged here).
pub(super) async fn write(store: &StoreHandles, pod: &Pod, terminated: bool) -> Result<Mirror, ()> {
    let r = if pod.is_static() {
        mirror(store, pod).await
    } else {
        api_pod(store, pod, terminated).await.map(|()| None)
    };
    r.map_err(|e| warn!(pod = pod.name(), error = %e, "status not written to the store"))
}

async fn api_pod(store: &StoreHandles, pod: &Pod, terminated: bool) -> Result<(), StoreError> {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let Some(stored) = write_status(store, pod, uid, (pod.name(), pod.namespace())).await? else {
        return Ok(());
    };
    let deleting = stored.value()["metadata"]["deletionTimestamp"].is_string();
    if terminated && deleting {
        info!(
            pod = pod.name(),
            pod_uid = uid,
            "pod terminated; removing it from the store"
        );
        delete(store, pod.namespace(), pod.name(), uid).await?;
    }
    Ok(())
}

fn mirror_of(o: &StoredObject) -> Option<String> {
    o.value()["metadata"]["annotations"][MIRROR_ANNOTATION]
        .as_str()
        .map(str::to_string)
}

/// The mirror pod's body: the static pod's spec and labels, marked as a mirror, and
/// controlled by its node (`node`: the Node object), as the kubelet makes it: no
/// controller can adopt it, and it goes with its Node.
fn mirror_body(pod: &Pod, node: &StoredObject) -> Value {
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
        name: node.name.clone(),
        uid: node.uid.to_string(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    serde_json::to_value(m).unwrap_or(json!({}))
}

/// Makes the mirror; the node must be registered first (its UID is the owner's).
async fn create_mirror(store: &StoreHandles, pod: &Pod) -> Result<Option<Uid>, StoreError> {
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let node = get_kind(store, Kind::Node, "", node_name.unwrap_or_default()).await?;
    let msg = Create {
        resource: pods(),
        namespace: Some(pod.namespace().into()),
        body: mirror_body(pod, &node),
        opts: WriteOptions::default(),
    };
    match store
        .create
        .send(msg)
        .await
        .map_err(|e| StoreError::Db(e.to_string()))?
    {
        Ok(o) => {
            debug!(pod = pod.name(), mirror_uid = &*o.uid, "mirror pod created");
            Ok(Some(o.uid.clone()))
        }
        Err(StoreError::AlreadyExists { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes the mirror exist, current, and not marked for deletion; writes its status (a
/// mirror just made gets it at once: waiting for the pod's next change could leave it
/// bare for as long as the pod does not change). Answers the mirror's UID and revision.
async fn mirror(store: &StoreHandles, pod: &Pod) -> Result<Mirror, StoreError> {
    let static_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let made = match get(store, pod.namespace(), pod.name()).await {
        Err(StoreError::NotFound { .. }) => create_mirror(store, pod).await?,
        Err(e) => return Err(e),
        Ok(current) => match mirror_of(&current) {
            // An API pod of the same name: not ours to touch.
            None => return Ok(None),
            Some(of)
                if of != static_uid || {
                    let meta = &current.value()["metadata"];
                    // Deleted through the API, or made before mirrors had their node as
                    // owner.
                    meta["deletionTimestamp"].is_string() || meta["ownerReferences"].is_null()
                } =>
            {
                info!(
                    pod = pod.name(),
                    "mirror pod outdated or deleted through the API; making it again"
                );
                delete(store, pod.namespace(), pod.name(), &current.uid).await?;
                create_mirror(store, pod).await?
            }
            Some(_) => Some(current.uid.clone()),
        },
    };
    let Some(mirror_uid) = made else {
        return Ok(None);
    };
    let written = write_status(store, pod, &mirror_uid, (pod.name(), pod.namespace())).await?;
    Ok(written.map(|o| (mirror_uid, o.revision)))
}

/// Whether pod `name`'s mirror is still the object at `revision` (nobody deleted or
/// changed it since its status was written): a lookup, without parsing anything.
pub(super) async fn mirror_unchanged(
    store: &StoreHandles,
    ns: &str,
    name: &str,
    revision: u64,
) -> bool {
    get(store, ns, name)
        .await
        .is_ok_and(|o| o.revision == revision)
}

/// The static pod is gone for good: so is its mirror.
pub(super) async fn remove_mirror(store: &StoreHandles, pod: &Pod) {
    let static_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    if let Ok(current) = get(store, pod.namespace(), pod.name()).await
        && mirror_of(&current).as_deref() == Some(static_uid)
        && let Err(e) = delete(store, pod.namespace(), pod.name(), &current.uid).await
    {
        warn!(pod = pod.name(), error = %e, "mirror pod not removed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_the_kubelet_does_not_own_survive_its_writes() {
        let ours: k8s_openapi::api::core::v1::PodStatus = serde_json::from_value(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}))
        .unwrap();
        let stored = json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}]});
        let v = merged(&Some(ours), &stored);
        let types: Vec<(&str, &str)> = v["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
            .collect();
        assert_eq!(types, [("Ready", "True"), ("DisruptionTarget", "True")]);
    }
}
