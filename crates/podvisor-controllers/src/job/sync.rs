//! A Job sync's writes, in the order tracking needs: the status first (finished pods
//! recorded as uncounted), then the finalizers of the recorded pods, then creates (in
//! slow-start batches, from the template, tracked and owned) and deletes; or the Job
//! itself, past its TTL.

use std::sync::Arc;

use futures_util::future::join_all;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_client::{Api, Client, DeleteParams, Error, PostParams, Subresource};
use podvisor_machinery::controller::SyncError;

use super::plan::{Plan, TRACKING};
use crate::replicaset::batches;

#[derive(Debug, Default)]
pub struct Report {
    pub created: Vec<String>,
    /// Creates expected and never sent or failed.
    pub skipped: usize,
    pub deleted: Vec<String>,
    /// A delete failed: the expectations of this sync will not all be met.
    pub delete_failed: bool,
    /// Due again after this long (a deadline the Job's state names).
    pub requeue: Option<std::time::Duration>,
    pub error: Option<SyncError>,
}

/// The pod the Job's template makes: `<job>-xxxxx`, tracked by the finalizer.
pub fn from_template(job: &Job) -> Pod {
    let t = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let meta = t.metadata.unwrap_or_default();
    let mut finalizers = meta.finalizers.unwrap_or_default();
    finalizers.push(TRACKING.into());
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-",
                job.metadata.name.as_deref().unwrap_or_default()
            )),
            namespace: job.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: Some(finalizers),
            owner_references: Some(vec![crate::owners::controller_ref(job)]),
            ..ObjectMeta::default()
        },
        spec: t.spec,
        status: None,
    }
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

pub(super) async fn untrack(pods: &Api<Pod>, p: &Pod) -> Result<(), Error> {
    let n = name(p);
    let edit = pods.edit(&n, p.metadata.uid.as_deref(), Subresource::Main, 3, |p| {
        let Some(f) = p.metadata.finalizers.as_mut() else {
            return false;
        };
        let before = f.len();
        f.retain(|x| x != TRACKING);
        let changed = f.len() != before;
        if f.is_empty() {
            p.metadata.finalizers = None;
        }
        changed
    });
    match edit.await {
        Ok(_) | Err(Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn create(pods: &Api<Pod>, job: &Job, n: usize, report: &mut Report) {
    let body = from_template(job);
    let pp = PostParams::default();
    for size in batches(n) {
        let results = join_all((0..size).map(|_| pods.create(&pp, body.clone()))).await;
        for r in results {
            match r {
                Ok(p) => report.created.push(name(&p)),
                Err(e) => {
                    report
                        .error
                        .get_or_insert(SyncError::new("creating a pod", e));
                }
            }
        }
        if report.error.is_some() {
            report.skipped = n - report.created.len();
            return;
        }
    }
}

async fn delete(pods: &Api<Pod>, victims: &[Arc<Pod>], report: &mut Report) {
    for p in victims {
        let dp = DeleteParams::if_uid(p.metadata.uid.as_deref().unwrap_or_default());
        match pods.delete(&name(p), &dp).await {
            Ok(_) | Err(Error::NotFound { .. }) => report.deleted.push(name(p)),
            Err(e) => {
                report.delete_failed = true;
                report.error = Some(SyncError::new("deleting a pod", e));
            }
        }
    }
}

/// The planned status, written against the version of the Job it was planned from: a
/// status written since (by an earlier sync whose watch event has not come) makes this one
/// conflict and be planned again, rather than erase what that one recorded.
async fn write_status(client: &Client, job: &Job, plan: &Plan) -> Result<(), Error> {
    if job.status.as_ref() == Some(&plan.status) {
        return Ok(());
    }
    let jobs: Api<Job> = Api::namespaced(
        client.clone(),
        job.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let mut next = job.clone();
    next.status = Some(plan.status.clone());
    jobs.replace_status(&PostParams::default(), next)
        .await
        .map(|_| ())
}

/// Carries `plan` out for `job`.
pub async fn run(client: Client, job: Arc<Job>, plan: Plan) -> Report {
    let mut report = Report {
        requeue: plan.requeue,
        ..Report::default()
    };
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    if plan.delete_job {
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let dp = DeleteParams::if_uid(job.metadata.uid.as_deref().unwrap_or_default());
        if let Err(e) = jobs.delete(name, &dp).await {
            report.error = Some(SyncError::new("deleting the finished job", e));
        }
        return report;
    }
    if let Err(e) = write_status(&client, &job, &plan).await {
        report.error = Some(SyncError::new("writing the status", e));
        report.skipped = plan.create;
        return report;
    }
    let pods: Api<Pod> = Api::namespaced(client, ns);
    for p in &plan.untrack {
        if let Err(e) = untrack(&pods, p).await {
            report.error = Some(SyncError::new("removing a finalizer", e));
        }
    }
    create(&pods, &job, plan.create, &mut report).await;
    delete(&pods, &plan.delete, &mut report).await;
    report
}
