//! A sync's writes, against the store: adoptions and releases (each pod read afresh and
//! written against its resourceVersion), creates in slow-start batches (1, 2, 4, ...;
//! one batch at a time, all of a batch at once, stopping after the first batch with an
//! error, so an admission refusal costs one create, not five hundred), deletes, then the
//! status (only when it changed).

use std::sync::Arc;

use futures_util::future::join_all;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{ActorRef, Recipient};
use podvisor_core::{Kind, ObjectKey, PodUid};
use podvisor_store::actor::{Create, Delete, Get, Update};
use podvisor_store::{DeleteOptions, Resource, StoreActor, StoreError, WriteOptions};
use serde_json::Value;

use super::plan::{Manage, Plan, batches};
use super::pods::{from_template, owner_reference, selects};
use super::status::{self, ManageError};
use crate::store_calls::{self, mailbox};

/// The store messages a sync sends.
#[derive(Clone)]
pub struct StoreHandles {
    pub get: Recipient<Get>,
    pub create: Recipient<Create>,
    pub update: Recipient<Update>,
    pub delete: Recipient<Delete>,
}

impl StoreHandles {
    /// Sending to the store actor itself.
    pub fn of(store: &ActorRef<StoreActor>) -> Self {
        Self {
            get: store.recipient(),
            create: store.recipient(),
            update: store.recipient(),
            delete: store.recipient(),
        }
    }
}

/// What a sync did, for the controller's expectations, events and retries.
#[derive(Debug, Default)]
pub struct Report {
    pub created: Vec<String>,
    /// Creates expected but not sent or failed: never coming through the watch.
    pub skipped: usize,
    pub deleted: Vec<String>,
    /// Deletes that failed (their expectations are met by hand).
    pub failed_deletes: Vec<PodUid>,
    pub manage_error: Option<ManageError>,
    /// Adopting or releasing failed, or the status could not be written.
    pub error: Option<String>,
}

/// Rewrites the stored pod `uid` with `edit` (which answers `false` to leave it alone),
/// against its resourceVersion, retrying conflicts. Whether it was rewritten.
async fn edit_pod(
    h: &StoreHandles,
    pod: &Pod,
    edit: impl Fn(&mut Value) -> bool,
) -> Result<bool, StoreError> {
    let (ns, name) = (
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or(""),
    );
    for _ in 0..3 {
        let Some(o) = store_calls::get(&h.get, Kind::Pod, ns, name).await? else {
            return Ok(false);
        };
        if Some(&*o.uid) != pod.metadata.uid.as_deref() {
            return Ok(false);
        }
        let mut v = o.value();
        if !edit(&mut v) {
            return Ok(false);
        }
        let msg = Update {
            resource: Resource::of(Kind::Pod),
            body: v,
            status_only: false,
            opts: WriteOptions::default(),
        };
        match h.update.send(msg).await.map_err(mailbox)? {
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound { .. }) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Db(format!("pod {name} kept changing")))
}

/// Whether the ReplicaSet, read afresh, is still the one that planned and not deleting.
async fn can_adopt(h: &StoreHandles, rs: &ReplicaSet) -> Result<bool, StoreError> {
    let m = &rs.metadata;
    let fresh = store_calls::get(
        &h.get,
        Kind::ReplicaSet,
        m.namespace.as_deref().unwrap_or(""),
        m.name.as_deref().unwrap_or(""),
    )
    .await?;
    Ok(fresh.is_some_and(|o| {
        Some(&*o.uid) == m.uid.as_deref() && o.value()["metadata"]["deletionTimestamp"].is_null()
    }))
}

/// Adopts and releases as planned.
async fn claim(h: &StoreHandles, rs: &ReplicaSet, plan: &Plan) -> Result<(), StoreError> {
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let selector = rs
        .spec
        .as_ref()
        .map(|s| s.selector.clone())
        .unwrap_or_default();
    if !plan.adopt.is_empty() && !can_adopt(h, rs).await? {
        return Err(StoreError::Conflict {
            resource: "replicasets.apps",
            name: rs.metadata.name.clone().unwrap_or_default(),
            reason: "it was deleted or replaced before adopting".into(),
        });
    }
    let owner = owner_reference(rs);
    for pod in &plan.adopt {
        let adopted = edit_pod(h, pod, |v| {
            let p: Pod = serde_json::from_value(v.clone()).unwrap_or_default();
            let orphan = super::pods::controller_of(&p).is_none();
            let ok = orphan
                && p.metadata.deletion_timestamp.is_none()
                && selects(&selector, &super::pods::labels(&p));
            if ok {
                let refs = v["metadata"]["ownerReferences"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                v["metadata"]["ownerReferences"] =
                    Value::Array([refs, vec![owner.clone()]].concat());
            }
            ok
        })
        .await?;
        if !adopted {
            // The plan counted it: with it gone, being deleted or taken, the plan is wrong.
            return Err(StoreError::Conflict {
                resource: "pods",
                name: pod.metadata.name.clone().unwrap_or_default(),
                reason: "it changed before it could be adopted".into(),
            });
        }
    }
    for pod in &plan.release {
        edit_pod(h, pod, |v| {
            let Some(refs) = v["metadata"]["ownerReferences"].as_array() else {
                return false;
            };
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| r["uid"] != uid.as_str())
                .cloned()
                .collect();
            let changed = kept.len() != refs.len();
            v["metadata"]["ownerReferences"] = Value::Array(kept);
            changed
        })
        .await?;
    }
    Ok(())
}

async fn create_one(h: &StoreHandles, body: Value, ns: &str) -> Result<String, StoreError> {
    let msg = Create {
        resource: Resource::of(Kind::Pod),
        namespace: Some(ns.into()),
        body,
        opts: WriteOptions::default(),
    };
    Ok(h.create.send(msg).await.map_err(mailbox)??.name.clone())
}

/// Creates `n` pods in slow-start batches.
async fn create(h: &StoreHandles, rs: &ReplicaSet, n: usize, report: &mut Report) {
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let body = from_template(rs);
    for size in batches(n) {
        let results = join_all((0..size).map(|_| create_one(h, body.clone(), &ns))).await;
        let mut error = None;
        for r in results {
            match r {
                Ok(name) => report.created.push(name),
                Err(e) => error = error.or(Some(e)),
            }
        }
        if let Some(e) = error {
            report.skipped = n - report.created.len();
            report.manage_error = Some(ManageError {
                reason: "FailedCreate",
                message: e.to_string(),
            });
            return;
        }
    }
}

async fn delete(h: &StoreHandles, pods: &[Arc<Pod>], report: &mut Report) {
    let one = |p: &Arc<Pod>| {
        let msg = Delete {
            resource: Resource::of(Kind::Pod),
            namespace: p.metadata.namespace.clone().unwrap_or_default(),
            name: p.metadata.name.clone().unwrap_or_default(),
            opts: DeleteOptions {
                precondition_uid: p.metadata.uid.clone(),
                ..DeleteOptions::default()
            },
        };
        let d = h.delete.clone();
        async move { d.send(msg).await.map_err(mailbox).and_then(|r| r) }
    };
    let results = join_all(pods.iter().map(one)).await;
    for (p, r) in pods.iter().zip(results) {
        let name = p.metadata.name.clone().unwrap_or_default();
        match r {
            Ok(_) => report.deleted.push(name),
            Err(e) => {
                report
                    .failed_deletes
                    .push(PodUid::from(p.metadata.uid.as_deref().unwrap_or("")));
                if !matches!(e, StoreError::NotFound { .. } | StoreError::Conflict { .. }) {
                    let message = format!("unable to delete pods: {e}");
                    report.manage_error = Some(ManageError {
                        reason: "FailedDelete",
                        message,
                    });
                }
            }
        }
    }
}

/// Writes `new` as the status of the ReplicaSet `key` (still `uid`), retrying a conflict.
async fn write_status(
    h: &StoreHandles,
    key: &ObjectKey,
    uid: &str,
    new: &ReplicaSetStatus,
) -> Result<(), StoreError> {
    let ns = key.namespace.as_deref().unwrap_or("");
    for _ in 0..2 {
        let Some(o) = store_calls::get(&h.get, Kind::ReplicaSet, ns, &key.name).await? else {
            return Ok(());
        };
        if *o.uid != *uid {
            return Ok(());
        }
        let mut v = o.value();
        v["status"] = serde_json::to_value(new).unwrap_or(Value::Null);
        let msg = Update {
            resource: Resource::of(Kind::ReplicaSet),
            body: v,
            status_only: true,
            opts: WriteOptions::default(),
        };
        match h.update.send(msg).await.map_err(mailbox)? {
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound { .. }) | Ok(_) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Db("the ReplicaSet kept changing".into()))
}

/// Carries out `plan` for `rs` and writes its status.
pub async fn run(
    h: StoreHandles,
    key: ObjectKey,
    rs: Arc<ReplicaSet>,
    plan: Plan,
    now_ms: i64,
) -> Report {
    let mut report = Report::default();
    if let Err(e) = claim(&h, &rs, &plan).await {
        report.error = Some(format!("claiming pods: {e}"));
        if let Manage::Create(n) = plan.manage {
            report.skipped = n;
        }
        if let Manage::Delete(pods) = &plan.manage {
            report.failed_deletes = pods
                .iter()
                .filter_map(|p| p.metadata.uid.as_deref().map(PodUid::from))
                .collect();
        }
        return report;
    }
    match &plan.manage {
        Manage::Nothing => {}
        Manage::Create(n) => create(&h, &rs, *n, &mut report).await,
        Manage::Delete(pods) => delete(&h, pods, &mut report).await,
    }
    let new = status::compute(&rs, &plan.claimed, report.manage_error.as_ref(), now_ms);
    if status::differs(&rs, &new) {
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        if let Err(e) = write_status(&h, &key, &uid, &new).await {
            report.error = Some(format!("writing the status: {e}"));
        }
    }
    report
}
