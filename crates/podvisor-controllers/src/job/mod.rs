//! The Job controller actor (kind `job-controller`): runs each Job's pods to completion, as
//! kube-controller-manager's does, on the shared controller machinery. Informers on Jobs
//! and on this node's pods that a Job controls (indexed by its UID) feed a work queue of
//! Job keys; a sync plans from the caches (`plan.rs`, `failure.rs`) and carries the plan
//! out (`sync.rs`), with expectations so that a pod created and not yet seen is not
//! created twice.
//!
//! It is a [`Reconciler`] run by the machinery's [`Controller`]: no messages of its own.
//!
//! Restart: nothing is kept. Counts live in the Job's status and its pods' tracking
//! finalizers, so a new instance counts each finished pod exactly once.

mod failure;
mod plan;
mod sync;
mod tracking;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use podvisor_actors::Recipient;
use podvisor_client::{Api, Client, ListParams};
use podvisor_core::{Kind, ObjectKey, PodUid};
use podvisor_machinery::cache::{Cache, Delta};
use podvisor_machinery::controller::{
    Controller, Effects, Event, Reconciler, SyncError, Watches, World,
};
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::expectations::Expectations;
use serde::Serialize;
use tracing::warn;

pub use failure::{Verdict, backoff, verdict};
pub use plan::{Plan, TRACKING, plan};
pub use sync::from_template;

/// The `spec.managedBy` of the Jobs this controller runs (none named means this one).
pub const MANAGED_BY: &str = "kubernetes.io/job-controller";

/// Syncs under way at once.
pub const WORKERS: usize = 4;

/// The Job controller: the runtime around [`Jobs`].
pub type JobController = Controller<Jobs>;

/// The Job controller of the node `node`, run by the machinery.
pub fn controller(node: &str, client: Client, events: Recipient<RecordEvent>) -> JobController {
    Controller::new(Jobs::new(node), client, events, WORKERS)
}

fn job_controller(p: &Pod) -> Option<&OwnerReference> {
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

/// The Job controller's own state: its expectations and counts.
pub struct Jobs {
    node: String,
    expectations: Expectations<ObjectKey, PodUid>,
    created: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobCounts {
    pub created: u64,
}

impl Jobs {
    pub fn new(node: &str) -> Self {
        Self {
            node: node.to_string(),
            expectations: Expectations::new(),
            created: 0,
        }
    }

    /// The Job a pod change concerns, meeting its expectations; or a pod to release.
    fn pod_changed(
        &mut self,
        d: &Delta<Pod>,
        w: &World<Self>,
        orphans: &mut Vec<Arc<Pod>>,
    ) -> Option<ObjectKey> {
        let pod = d.new.as_ref().or(d.old.as_ref())?;
        let Some(key) = job_of(w, pod) else {
            if let Some(p) = d.new.as_ref().filter(|_| w.roots_listed) {
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

/// The cached Job a pod names as its controller (that incarnation).
fn job_of(w: &World<Jobs>, pod: &Pod) -> Option<ObjectKey> {
    let r = job_controller(pod)?;
    let key = ObjectKey::new(Kind::Job, pod.metadata.namespace.as_deref(), &r.name);
    let job = w.roots.get(&key)?;
    (job.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
}

/// Pods whose Job is gone lose their tracking finalizer: nothing will count them,
/// and it would keep them (and their namespace) for ever.
fn release(client: &Client, pods: Vec<Arc<Pod>>, fx: &mut Effects) {
    for p in pods.into_iter().filter(|p| plan::tracked(p)) {
        let api = Api::namespaced(
            client.clone(),
            p.metadata.namespace.as_deref().unwrap_or_default(),
        );
        fx.spawn(async move {
            if let Err(e) = sync::untrack(&api, &p).await {
                warn!(pod = ?p.metadata.name, error = %e, "releasing a pod of a deleted job");
            }
        });
    }
}

impl Reconciler for Jobs {
    const KIND: &'static str = "job-controller";
    type Root = Job;
    type Owned = Pod;
    /// Not watched.
    type Trigger = Job;
    type Report = sync::Report;
    type Counts = JobCounts;

    fn watches(&self) -> Watches {
        Watches {
            roots: ListParams::default(),
            owned: ListParams::default().field_equals("spec.nodeName", &self.node),
            trigger: None,
        }
    }

    fn owned_cache(&self) -> Cache<Pod> {
        Cache::new().with_index(controller_uid).with_filter(is_jobs)
    }

    /// The pods of Jobs deleted while no instance watched are released.
    fn on_synced(&mut self, w: &World<Self>, fx: &mut Effects) {
        let orphans = w
            .owned
            .values()
            .filter(|p| job_of(w, p).is_none())
            .cloned()
            .collect();
        release(&w.client, orphans, fx);
    }

    fn on_root(&mut self, d: &Delta<Job>, w: &World<Self>, fx: &mut Effects) {
        if let (Some(old), None) = (&d.old, &d.new) {
            let key = ObjectKey::new(Kind::Job, d.key.namespace.as_deref(), &d.key.name);
            self.expectations.forget(&key);
            let uid = old.metadata.uid.as_deref().unwrap_or_default();
            release(&w.client, w.owned.indexed(uid).cloned().collect(), fx);
        }
    }

    fn on_owned(&mut self, d: &Delta<Pod>, w: &World<Self>, fx: &mut Effects) {
        let mut orphans = Vec::new();
        if let Some(key) = self.pod_changed(d, w, &mut orphans) {
            fx.sync(key);
        }
        release(&w.client, orphans, fx);
    }

    fn reconcile(
        &mut self,
        key: &ObjectKey,
        job: Arc<Job>,
        w: &World<Self>,
        fx: &mut Effects,
    ) -> Option<LocalBoxFuture<'static, sync::Report>> {
        // A Job another controller manages (`spec.managedBy`) is left to it, as
        // kube-controller-manager leaves it.
        let manager = job.spec.as_ref().and_then(|s| s.managed_by.as_deref());
        if manager.is_some_and(|m| m != MANAGED_BY) {
            return None;
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let pods: Vec<Arc<Pod>> = w.owned.indexed(uid).cloned().collect();
        let now_ms = podvisor_core::time::now().0.as_millisecond();
        let plan = plan::plan(&job, &pods, self.expectations.satisfied(key), now_ms);
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
            let event = if *warning {
                Event::warning(reason, message.clone())
            } else {
                Event::normal(reason, message.clone())
            };
            fx.event(key, event);
        }
        Some(Box::pin(sync::run(w.client.clone(), job, plan)))
    }

    fn reconciled(
        &mut self,
        key: &ObjectKey,
        report: sync::Report,
        _: &World<Self>,
        fx: &mut Effects,
    ) -> Result<Option<Duration>, SyncError> {
        for _ in 0..report.skipped {
            self.expectations.creation_observed(key);
        }
        if report.delete_failed {
            self.expectations.forget(key);
        }
        self.created += report.created.len() as u64;
        crate::owners::pod_events(fx, key, &report.created, &report.deleted);
        report.error.map_or(Ok(report.requeue), Err)
    }

    fn counts(&self) -> JobCounts {
        JobCounts {
            created: self.created,
        }
    }
}
