//! One eviction, against the store: a last look at the current node and pod (a taint
//! removed or a toleration added a moment ago, not yet seen through the watch, evicts
//! nothing: kubernetes#119862, #139992), then the `DisruptionTarget` condition, then a
//! graceful delete of that incarnation (UID precondition), which the node agent carries out
//! with the pod's grace period.

use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::{ActorRef, Recipient};
use podvisor_core::{Kind, ObjectKey, PodExt, PodUid};
use podvisor_store::actor::{Delete, Get, Update};
use podvisor_store::{DeleteOptions, Resource, StoreActor, StoreError, WriteOptions};
use serde_json::{Value, json};

use super::deadline;
use crate::clock::WallClock;
use crate::store_calls::{self, mailbox};

/// The store messages an eviction sends.
#[derive(Clone)]
pub struct StoreHandles {
    pub get: Recipient<Get>,
    pub update: Recipient<Update>,
    pub delete: Recipient<Delete>,
}

impl StoreHandles {
    /// Sending to the store actor itself.
    pub fn of(store: &ActorRef<StoreActor>) -> Self {
        Self {
            get: store.recipient(),
            update: store.recipient(),
            delete: store.recipient(),
        }
    }
}

/// How a due eviction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Marked and deleted gracefully.
    Evicted,
    /// That pod is gone or replaced by another of its name.
    Gone,
    /// Already being deleted.
    AlreadyDeleting,
    /// The current node and pod say not now: at this wall time (ms), or never.
    NotDue(Option<u64>),
}

const ATTEMPTS: usize = 3;

/// The condition the taint manager sets before it deletes.
fn disruption_target() -> Value {
    json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastTransitionTime": serde_json::to_value(podvisor_core::time::now()).unwrap_or(Value::Null),
    })
}

/// Adds the condition to the stored pod `uid` (retrying conflicts). `Ok(false)`: gone.
async fn mark(h: &StoreHandles, key: &ObjectKey, uid: &PodUid) -> Result<bool, StoreError> {
    let ns = key.namespace.as_deref().unwrap_or_default();
    for _ in 0..ATTEMPTS {
        let Some(o) = store_calls::get(&h.get, Kind::Pod, ns, &key.name).await? else {
            return Ok(false);
        };
        if *o.uid != **uid {
            return Ok(false);
        }
        let mut v = o.value();
        let conditions = v["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut kept: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "DisruptionTarget")
            .collect();
        kept.push(disruption_target());
        v["status"]["conditions"] = Value::Array(kept);
        let msg = Update {
            resource: Resource::of(Kind::Pod),
            body: v,
            status_only: true,
            opts: WriteOptions::default(),
        };
        match h.update.send(msg).await.map_err(mailbox)? {
            Ok(_) => return Ok(true),
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Db("the pod kept changing".into()))
}

/// The deadline the current node and pod give, as the scheduler computes it.
fn current_deadline(node: Option<&Node>, pod: &Pod, clock: &WallClock) -> Option<u64> {
    let taints = node
        .and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let now = clock.now_ms();
    let timed = deadline::no_execute(&taints, |_| now);
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    deadline::deadline(&timed, &tolerations).ms()
}

/// The last look, then the eviction.
pub async fn evict(
    h: StoreHandles,
    node_name: String,
    key: ObjectKey,
    uid: PodUid,
    clock: WallClock,
) -> Result<Outcome, StoreError> {
    let ns = key.namespace.clone().unwrap_or_default();
    let Some(stored) = store_calls::get(&h.get, Kind::Pod, &ns, &key.name).await? else {
        return Ok(Outcome::Gone);
    };
    let pod: Pod = stored.typed().unwrap_or_default();
    if *stored.uid != *uid {
        return Ok(Outcome::Gone);
    }
    if pod.is_deleted() {
        return Ok(Outcome::AlreadyDeleting);
    }
    let node: Option<Node> = store_calls::get(&h.get, Kind::Node, "", &node_name)
        .await?
        .and_then(|o| o.typed());
    match current_deadline(node.as_ref(), &pod, &clock) {
        Some(ms) if ms <= clock.now_ms() => {}
        later => return Ok(Outcome::NotDue(later)),
    }
    if !mark(&h, &key, &uid).await? {
        return Ok(Outcome::Gone);
    }
    let msg = Delete {
        resource: Resource::of(Kind::Pod),
        namespace: ns,
        name: key.name.clone(),
        opts: DeleteOptions {
            precondition_uid: Some(uid.to_string()),
            ..DeleteOptions::default()
        },
    };
    match h.delete.send(msg).await.map_err(mailbox)? {
        Ok(_) => Ok(Outcome::Evicted),
        Err(StoreError::NotFound { .. } | StoreError::Conflict { .. }) => Ok(Outcome::Gone),
        Err(e) => Err(e),
    }
}
