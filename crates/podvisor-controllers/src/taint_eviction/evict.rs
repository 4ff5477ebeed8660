//! One eviction, through the client: a last look at the current node and pod (a taint
//! removed or a toleration added a moment ago, not yet seen through the watch, evicts
//! nothing: kubernetes#119862, #139992), then the `DisruptionTarget` condition, then a
//! graceful delete of that incarnation (UID precondition), which the node agent carries out
//! with the pod's grace period.

use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use podvisor_client::{Api, Client, DeleteParams, Error, Subresource};
use podvisor_core::{ObjectKey, PodExt, PodUid};

use super::deadline;
use crate::clock::WallClock;

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
fn disruption_target() -> PodCondition {
    PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("DeletionByTaintManager".into()),
        message: Some("Taint manager: deleting due to NoExecute taint".into()),
        last_transition_time: Some(podvisor_core::time::now()),
        ..PodCondition::default()
    }
}

/// Adds the condition to the API's pod `uid` (retrying conflicts). `Ok(false)`: gone.
async fn mark(pods: &Api<Pod>, key: &ObjectKey, uid: &PodUid) -> Result<bool, Error> {
    let marked = pods
        .edit(
            &key.name,
            Some(uid.as_str()),
            Subresource::Status,
            ATTEMPTS,
            |p| {
                let conditions = p
                    .status
                    .get_or_insert_with(Default::default)
                    .conditions
                    .get_or_insert_with(Vec::new);
                conditions.retain(|c| c.type_ != "DisruptionTarget");
                conditions.push(disruption_target());
                true
            },
        )
        .await?;
    Ok(marked.is_some())
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
    client: Client,
    node_name: String,
    key: ObjectKey,
    uid: PodUid,
    clock: WallClock,
) -> Result<Outcome, Error> {
    let pods: Api<Pod> =
        Api::namespaced(client.clone(), key.namespace.as_deref().unwrap_or_default());
    let Some(pod) = pods.get_opt(&key.name).await? else {
        return Ok(Outcome::Gone);
    };
    if pod.metadata.uid.as_deref() != Some(uid.as_str()) {
        return Ok(Outcome::Gone);
    }
    if pod.is_deleted() {
        return Ok(Outcome::AlreadyDeleting);
    }
    let node = Api::<Node>::all(client).get_opt(&node_name).await?;
    match current_deadline(node.as_deref(), &pod, &clock) {
        Some(ms) if ms <= clock.now_ms() => {}
        later => return Ok(Outcome::NotDue(later)),
    }
    if !mark(&pods, &key, &uid).await? {
        return Ok(Outcome::Gone);
    }
    match pods
        .delete(&key.name, &DeleteParams::if_uid(uid.as_str()))
        .await
    {
        Ok(_) => Ok(Outcome::Evicted),
        Err(Error::NotFound { .. } | Error::Conflict { .. }) => Ok(Outcome::Gone),
        Err(e) => Err(e),
    }
}
