//! A sync's writes, against the store: adoptions and releases (each pod read afresh and
//! written against its resourceVersion), creates in slow-start batches (1, 2, 4, ...;
//! one batch at a time, all of a batch at once, stopping after the first batch with an
//! error, so an admission refusal costs one create, not five hundred), deletes, then the
//! status (only when it changed).

use std::sync::Arc;

use futures_util::future::join_all;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use podvisor_client::{Api, Client, DeleteParams, Error, PostParams, Subresource};
use podvisor_core::{ObjectKey, PodUid};
use podvisor_machinery::controller::SyncError;

use super::plan::{Manage, Plan, batches};
use super::pods::{from_template, selects};
use super::status::{self, ManageError};
use crate::owners::controller_ref;

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
    /// The first step that failed: adopting or releasing, creating, deleting, or the
    /// status.
    pub error: Option<SyncError>,
}

const ATTEMPTS: usize = 3;

fn pods_of(client: &Client, rs: &ReplicaSet) -> Api<Pod> {
    Api::namespaced(
        client.clone(),
        rs.metadata.namespace.as_deref().unwrap_or(""),
    )
}

/// Rewrites the API's pod (still the incarnation `pod`) with `edit`, which answers
/// `false` to leave it alone; whether it was rewritten.
async fn edit_pod(
    api: &Api<Pod>,
    pod: &Pod,
    edit: impl Fn(&mut Pod) -> bool,
) -> Result<bool, Error> {
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let uid = pod.metadata.uid.as_deref();
    let written = api
        .edit(name, uid, Subresource::Main, ATTEMPTS, edit)
        .await?;
    Ok(written.is_some())
}

/// Whether the ReplicaSet, read afresh, is still the one that planned and not deleting.
async fn can_adopt(client: &Client, rs: &ReplicaSet) -> Result<bool, Error> {
    let m = &rs.metadata;
    let sets: Api<ReplicaSet> =
        Api::namespaced(client.clone(), m.namespace.as_deref().unwrap_or(""));
    let fresh = sets.get_opt(m.name.as_deref().unwrap_or("")).await?;
    Ok(fresh.is_some_and(|o| o.metadata.uid == m.uid && o.metadata.deletion_timestamp.is_none()))
}

/// Adopts and releases as planned.
async fn claim(client: &Client, rs: &ReplicaSet, plan: &Plan) -> Result<(), Error> {
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let selector = rs.spec.selector.clone();
    if !plan.adopt.is_empty() && !can_adopt(client, rs).await? {
        return Err(Error::conflict(
            "replicasets.apps",
            rs.metadata.name.as_deref().unwrap_or_default(),
            "it was deleted or replaced before adopting",
        ));
    }
    let api = pods_of(client, rs);
    let owner = controller_ref(rs);
    for pod in &plan.adopt {
        let adopted = edit_pod(&api, pod, |p| {
            let orphan = super::pods::controller_of(p).is_none();
            let ok = orphan
                && p.metadata.deletion_timestamp.is_none()
                && selects(&selector, &super::pods::labels(p));
            if ok {
                let refs = p.metadata.owner_references.get_or_insert_with(Vec::new);
                refs.push(owner.clone());
            }
            ok
        })
        .await?;
        if !adopted {
            // The plan counted it: with it gone, being deleted or taken, the plan is wrong.
            return Err(Error::conflict(
                "pods",
                pod.metadata.name.as_deref().unwrap_or_default(),
                "it changed before it could be adopted",
            ));
        }
    }
    for pod in &plan.release {
        edit_pod(&api, pod, |p| {
            let Some(refs) = p.metadata.owner_references.as_mut() else {
                return false;
            };
            let before = refs.len();
            refs.retain(|r| r.uid != uid);
            refs.len() != before
        })
        .await?;
    }
    Ok(())
}

/// Creates `n` pods in slow-start batches.
async fn create(client: &Client, rs: &ReplicaSet, n: usize, report: &mut Report) {
    let api = pods_of(client, rs);
    let body = from_template(rs);
    let pp = PostParams::default();
    for size in batches(n) {
        let results = join_all((0..size).map(|_| api.create(&pp, body.clone()))).await;
        let mut error = None;
        for r in results {
            match r {
                Ok(p) => report
                    .created
                    .push(p.metadata.name.clone().unwrap_or_default()),
                Err(e) => error = error.or(Some(e)),
            }
        }
        if let Some(e) = error {
            report.skipped = n - report.created.len();
            report.manage_error = Some(ManageError {
                reason: "FailedCreate",
                message: e.to_string(),
            });
            report.error = Some(SyncError::new("creating pods", e));
            return;
        }
    }
}

async fn delete(client: &Client, rs: &ReplicaSet, pods: &[Arc<Pod>], report: &mut Report) {
    let api = pods_of(client, rs);
    let one = |p: &Arc<Pod>| {
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = DeleteParams::if_uid(p.metadata.uid.as_deref().unwrap_or_default());
        let api = api.clone();
        async move { api.delete(&name, &dp).await }
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
                if !matches!(e, Error::NotFound { .. } | Error::Conflict { .. }) {
                    let message = format!("unable to delete pods: {e}");
                    report.manage_error = Some(ManageError {
                        reason: "FailedDelete",
                        message,
                    });
                    report.error = Some(SyncError::new("deleting pods", e));
                }
            }
        }
    }
}

/// Writes `new` as the status of the ReplicaSet `key` (still `uid`), retrying a conflict.
async fn write_status(
    client: &Client,
    key: &ObjectKey,
    uid: &str,
    new: &ReplicaSetStatus,
) -> Result<(), Error> {
    let sets: Api<ReplicaSet> =
        Api::namespaced(client.clone(), key.namespace.as_deref().unwrap_or(""));
    sets.edit(&key.name, Some(uid), Subresource::Status, 2, |rs| {
        rs.status = Some(new.clone());
        true
    })
    .await
    .map(|_| ())
}

/// Carries out `plan` for `rs` and writes its status.
pub async fn run(
    h: Client,
    key: ObjectKey,
    rs: Arc<ReplicaSet>,
    plan: Plan,
    now_ms: i64,
) -> Report {
    let mut report = Report::default();
    if let Err(e) = claim(&h, &rs, &plan).await {
        report.error = Some(SyncError::new("claiming pods", e));
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
        Manage::Delete(pods) => delete(&h, &rs, pods, &mut report).await,
    }
    let new = status::compute(&rs, &plan.claimed, report.manage_error.as_ref(), now_ms);
    if status::differs(&rs, &new) {
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        if let Err(e) = write_status(&h, &key, &uid, &new).await {
            report
                .error
                .get_or_insert(SyncError::new("writing the status", e));
        }
    }
    report
}
