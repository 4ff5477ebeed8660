//! The Job controller actor (kind `job-controller`): runs each Job's pods to completion, as
//! kube-controller-manager's does, on the shared controller machinery. Informers on Jobs
//! and on this node's pods that a Job controls (indexed by its UID) feed a work queue of
//! Job keys; a sync plans from the caches (`plan.rs`, `failure.rs`) and carries the plan
//! out (`sync.rs`), with expectations so that a pod created and not yet seen is not
//! created twice.
//!
//! Messages: none of its own; it handles its reflectors' [`Reflected`] deliveries.
//!
//! Restart: nothing is kept. Counts live in the Job's status and its pods' tracking
//! finalizers, so a new instance counts each finished pod exactly once.

mod failure;
mod plan;
mod sync;
mod tracking;

use std::sync::Arc;

use actix::prelude::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::due;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, ListParams};
use podvisor_core::{EventType, Kind, ObjectKey, PodUid};
use podvisor_machinery::cache::{Cache, Delta};
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::expectations::Expectations;
use podvisor_machinery::reflector::{Reflected, Reflector};
use podvisor_machinery::workers::{Outcome, WorkStats, Workers};
use serde::Serialize;
use tokio::time::Instant;
use tracing::warn;

pub use failure::{Verdict, backoff, verdict};
pub use plan::{Plan, TRACKING, plan};
pub use sync::from_template;

/// The `spec.managedBy` of the Jobs this controller runs (none named means this one).
pub const MANAGED_BY: &str = "kubernetes.io/job-controller";

/// Syncs under way at once.
pub const WORKERS: usize = 4;

fn job_controller(
    p: &Pod,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    let refs = p.metadata.owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true) && r.kind == "Job")
}

fn controller_uid(p: &Pod) -> Option<String> {
    job_controller(p).map(|r| r.uid.clone())
}

fn is_jobs(p: &Pod) -> bool {
    job_controller(p).is_some()
}

pub struct JobController {
    jobs_view: Reflector<Job>,
    pods_view: Reflector<Pod>,
    jobs: Cache<Job>,
    pods: Cache<Pod>,
    workers: Workers<ObjectKey>,
    expectations: Expectations<ObjectKey, PodUid>,
    client: Client,
    events: Recipient<RecordEvent>,
    created: u64,
    /// Whether the pods of Jobs deleted while no instance watched were released.
    swept: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobControllerSummary {
    pub jobs: usize,
    pub pods: usize,
    #[serde(flatten)]
    pub work: WorkStats,
    pub created: u64,
}

impl JobController {
    pub fn new(node: &str, client: Client, events: Recipient<RecordEvent>) -> Self {
        let bound_here = ListParams::default().field_equals("spec.nodeName", node);
        Self {
            jobs_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            pods_view: Reflector::new(Api::all(client.clone()), bound_here),
            jobs: Cache::new(),
            pods: Cache::new().with_index(controller_uid).with_filter(is_jobs),
            workers: Workers::new(WORKERS),
            expectations: Expectations::new(),
            client,
            events,
            created: 0,
            swept: false,
        }
    }

    fn on_delayed(&mut self, key: ObjectKey, _: Instant, ctx: &mut Context<Self>) {
        self.workers.add(key);
        self.work(ctx);
    }

    fn work(&mut self, ctx: &mut Context<Self>) {
        if !self.jobs_view.synced || !self.pods_view.synced {
            return;
        }
        if !self.swept {
            self.swept = true;
            let orphans = self
                .pods
                .values()
                .filter(|p| self.job_of(p).is_none())
                .cloned()
                .collect();
            self.release(orphans, ctx);
        }
        while let Some(key) = self.workers.start() {
            self.sync(key, ctx);
        }
    }

    fn sync(&mut self, key: ObjectKey, ctx: &mut Context<Self>) {
        let Some(job) = self.jobs.get(&key).cloned() else {
            self.expectations.forget(&key);
            self.workers.skip(&key);
            return;
        };
        // A Job another controller manages (`spec.managedBy`) is left to it, as
        // kube-controller-manager leaves it.
        let manager = job.spec.as_ref().and_then(|s| s.managed_by.as_deref());
        if manager.is_some_and(|m| m != MANAGED_BY) {
            self.workers.skip(&key);
            return;
        }
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let pods: Vec<Arc<Pod>> = self.pods.indexed(&uid).cloned().collect();
        let now_ms = podvisor_core::time::now().0.as_millisecond();
        let plan = plan::plan(&job, &pods, self.expectations.satisfied(&key), now_ms);
        if plan.create > 0 {
            self.expectations.expect_creations(key.clone(), plan.create);
        } else if !plan.delete.is_empty() {
            let uids = plan
                .delete
                .iter()
                .map(|p| PodUid::from(p.metadata.uid.as_deref().unwrap_or("")));
            self.expectations.expect_deletions(key.clone(), uids);
        }
        for (warning, reason, message) in &plan.events {
            self.event(&key, *warning, reason, message.clone());
        }
        let requeue = plan.requeue;
        ctx.spawn(
            sync::run(self.client.clone(), job, plan)
                .into_actor(self)
                .map(move |report, act, ctx| {
                    act.synced(&key, report, requeue);
                    act.work(ctx);
                }),
        );
    }

    fn event(&self, key: &ObjectKey, warning: bool, reason: &str, message: String) {
        let mut object = key.clone();
        object.uid = self
            .jobs
            .get(key)
            .and_then(|j| j.metadata.uid.as_deref().map(podvisor_core::Uid::from));
        let type_ = if warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.events.do_send(RecordEvent {
            object,
            type_,
            reason: reason.into(),
            message,
        });
    }

    fn synced(
        &mut self,
        key: &ObjectKey,
        report: sync::Report,
        requeue: Option<std::time::Duration>,
    ) {
        for _ in 0..report.skipped {
            self.expectations.creation_observed(key);
        }
        self.created += report.created.len() as u64;
        for name in &report.created {
            self.event(
                key,
                false,
                "SuccessfulCreate",
                format!("Created pod: {name}"),
            );
        }
        for name in &report.deleted {
            self.event(
                key,
                false,
                "SuccessfulDelete",
                format!("Deleted pod: {name}"),
            );
        }
        let outcome = match &report.error {
            Some(why) if why.starts_with("deleting a pod") => {
                self.expectations.forget(key);
                Outcome::Failed
            }
            Some(_) => Outcome::Failed,
            None => Outcome::Synced(requeue),
        };
        if let Some(delay) = self.workers.finished(key, outcome) {
            let why = report.error.unwrap_or_default();
            warn!(job = %key, error = %why, retry_in = ?delay, "sync failed; trying again");
        }
    }

    /// Pods whose Job is gone lose their tracking finalizer: nothing will count them,
    /// and it would keep them (and their namespace) for ever.
    fn release(&self, pods: Vec<Arc<Pod>>, ctx: &mut Context<Self>) {
        for p in pods.into_iter().filter(|p| plan::tracked(p)) {
            let api = Api::namespaced(
                self.client.clone(),
                p.metadata.namespace.as_deref().unwrap_or_default(),
            );
            ctx.spawn(
                async move {
                    if let Err(e) = sync::untrack(&api, &p).await {
                        warn!(pod = ?p.metadata.name, error = %e, "releasing a pod of a deleted job");
                    }
                }
                .into_actor(self),
            );
        }
    }

    /// The cached Job a pod names as its controller (that incarnation).
    fn job_of(&self, pod: &Pod) -> Option<ObjectKey> {
        let r = job_controller(pod)?;
        let key = ObjectKey::new(Kind::Job, pod.metadata.namespace.as_deref(), &r.name);
        let job = self.jobs.get(&key)?;
        (job.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
    }

    /// The Job a pod change concerns, meeting its expectations; or a pod to release.
    fn on_pod(&mut self, d: &Delta<Pod>, orphans: &mut Vec<Arc<Pod>>) -> Option<ObjectKey> {
        let pod = d.new.as_ref().or(d.old.as_ref())?;
        let r = job_controller(pod)?;
        let key = ObjectKey::new(Kind::Job, pod.metadata.namespace.as_deref(), &r.name);
        let job = self
            .jobs
            .get(&key)
            .filter(|j| j.metadata.uid.as_deref() == Some(r.uid.as_str()));
        let Some(_) = job else {
            if let Some(p) = d.new.as_ref().filter(|_| self.jobs_view.synced) {
                orphans.push(p.clone());
            }
            return None;
        };
        let uid = PodUid::from(pod.metadata.uid.as_deref().unwrap_or(""));
        match (&d.old, &d.new) {
            (None, Some(p)) if p.metadata.deletion_timestamp.is_none() => {
                self.expectations.creation_observed(&key)
            }
            (_, Some(p)) if p.metadata.deletion_timestamp.is_some() => {
                self.expectations.deletion_observed(&key, &uid)
            }
            (Some(_), None) => self.expectations.deletion_observed(&key, &uid),
            _ => {}
        }
        Some(key)
    }
}

impl Actor for JobController {
    type Context = Context<Self>;
}

impl SupervisedActor for JobController {
    const KIND: &'static str = "job-controller";
    type Summary = JobControllerSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.jobs_view.start(ctx, start.me.recipient());
        self.pods_view.start(ctx, start.me.recipient());
        due::drive(ctx, |a: &mut Self| a.workers.delayed(), Self::on_delayed);
    }

    fn summary(&self) -> JobControllerSummary {
        JobControllerSummary {
            jobs: self.jobs.len(),
            pods: self.pods.len(),
            work: self.workers.stats(),
            created: self.created,
        }
    }
}

impl Handler<Reflected<Job>> for JobController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Job>, ctx: &mut Context<Self>) {
        let Some(u) = self.jobs_view.accept(msg, ctx) else {
            return;
        };
        let mut orphans = Vec::new();
        for d in self.jobs.apply(u) {
            let key = ObjectKey::new(Kind::Job, d.key.namespace.as_deref(), &d.key.name);
            if let (Some(old), None) = (&d.old, &d.new) {
                self.expectations.forget(&key);
                let uid = old.metadata.uid.clone().unwrap_or_default();
                orphans.extend(self.pods.indexed(&uid).cloned());
            }
            self.workers.add(key);
        }
        self.release(orphans, ctx);
        self.work(ctx);
    }
}

impl Handler<Reflected<Pod>> for JobController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        let Some(u) = self.pods_view.accept(msg, ctx) else {
            return;
        };
        let mut orphans = Vec::new();
        for d in self.pods.apply(u) {
            if let Some(key) = self.on_pod(&d, &mut orphans) {
                self.workers.add(key);
            }
        }
        self.release(orphans, ctx);
        self.work(ctx);
    }
}
