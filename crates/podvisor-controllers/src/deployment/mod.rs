//! The Deployment controller actor (kind `deployment-controller`): rolls each Deployment's
//! pod template out through ReplicaSets, as kube-controller-manager's does, on the shared
//! controller machinery:
//!
//! - informers on Deployments and ReplicaSets feed a work queue of Deployment keys
//!   (`handlers.rs`); up to [`WORKERS`] syncs run at once, one per key. A watch on pods,
//!   kept in no cache, wakes a Recreate Deployment when one of its pods is deleted or
//!   finishes (its new pods wait for the old ones to stop);
//! - a sync plans from the caches (`plan.rs`): claim ReplicaSets, find or create the one
//!   named by the template's hash (`util.rs`), take one step of RollingUpdate or Recreate
//!   (`rolling.rs`, on the in-memory `world.rs`), prune the revision history, compute the
//!   status and its conditions (`status.rs`); then carries the writes out (`sync.rs`),
//!   each against the version it planned from. The ReplicaSet controller makes the pods.
//!
//! Messages: none of its own; it handles its reflectors' [`Reflected`] deliveries.
//!
//! Restart: nothing is kept. Every step is decided from the Deployment and its
//! ReplicaSets as they are, so a new instance takes the rollout up where the API says it
//! is: a ReplicaSet created before a crash is found by its template, not created twice.

mod handlers;
mod plan;
mod proportion;
mod rolling;
mod status;
mod sync;
mod util;
mod world;

use std::sync::Arc;

use actix::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::due;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, ListParams};
use podvisor_core::{EventType, ObjectKey};
use podvisor_machinery::cache::Cache;
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::reflector::{Reflected, Reflector};
use podvisor_machinery::workers::{Outcome, WorkStats, Workers};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{debug, warn};

pub use plan::{Plan, plan};
pub use util::{HASH_LABEL, REVISION, template_hash};
pub use world::{Scaled, Write};

/// Syncs under way at once (kube-controller-manager runs five workers).
pub const WORKERS: usize = 4;

pub struct DeploymentController {
    deployments_view: Reflector<Deployment>,
    sets_view: Reflector<ReplicaSet>,
    /// Pods, watched for Recreate's sake and not kept: what a sync needs of them it lists.
    pods_view: Reflector<Pod>,
    deployments: Cache<Deployment>,
    sets: Cache<ReplicaSet>,
    workers: Workers<ObjectKey>,
    client: Client,
    events: Recipient<RecordEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentControllerSummary {
    pub deployments: usize,
    pub replica_sets: usize,
    #[serde(flatten)]
    pub work: WorkStats,
}

impl DeploymentController {
    pub fn new(client: Client, events: Recipient<RecordEvent>) -> Self {
        Self {
            deployments_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            sets_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            pods_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            deployments: Cache::new(),
            sets: Cache::new(),
            workers: Workers::new(WORKERS),
            client,
            events,
        }
    }

    fn on_delayed(&mut self, key: ObjectKey, _: Instant, ctx: &mut Context<Self>) {
        self.workers.add(key);
        self.work(ctx);
    }

    fn work(&mut self, ctx: &mut Context<Self>) {
        if !self.deployments_view.synced || !self.sets_view.synced {
            return;
        }
        while let Some(key) = self.workers.start() {
            self.sync(key, ctx);
        }
    }

    fn sync(&mut self, key: ObjectKey, ctx: &mut Context<Self>) {
        let Some(d) = self.deployments.get(&key).cloned() else {
            self.workers.skip(&key);
            return;
        };
        let ns = key.namespace.clone().unwrap_or_default();
        let sets: Vec<Arc<ReplicaSet>> = self.sets.in_namespace(&ns).cloned().collect();
        let now_ms = podvisor_core::time::now().0.as_millisecond();
        let work = sync::run(self.client.clone(), d, sets, now_ms);
        ctx.spawn(work.into_actor(self).map(move |report, act, ctx| {
            act.synced(&key, report);
            act.work(ctx);
        }));
    }

    fn synced(&mut self, key: &ObjectKey, report: sync::Report) {
        let uid = self
            .deployments
            .get(key)
            .and_then(|d| d.metadata.uid.clone());
        let mut object = key.clone();
        object.uid = uid.as_deref().map(podvisor_core::Uid::from);
        for s in &report.scaled {
            self.events.do_send(RecordEvent {
                object: object.clone(),
                type_: EventType::Normal,
                reason: "ScalingReplicaSet".into(),
                message: s.message(),
            });
        }
        let outcome = match &report.error {
            Some(_) => Outcome::Failed,
            None => Outcome::Synced(report.requeue),
        };
        match self.workers.finished(key, outcome) {
            Some(delay) => {
                let why = report.error.unwrap_or_default();
                warn!(deployment = %key, error = %why, retry_in = ?delay, "sync failed; trying again");
            }
            None => debug!(deployment = %key, scaled = report.scaled.len(), "synced"),
        }
    }
}

impl Actor for DeploymentController {
    type Context = Context<Self>;
}

impl SupervisedActor for DeploymentController {
    const KIND: &'static str = "deployment-controller";
    type Summary = DeploymentControllerSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.deployments_view.start(ctx, start.me.recipient());
        self.sets_view.start(ctx, start.me.recipient());
        self.pods_view.start(ctx, start.me.recipient());
        due::drive(ctx, |a: &mut Self| a.workers.delayed(), Self::on_delayed);
    }

    fn summary(&self) -> DeploymentControllerSummary {
        DeploymentControllerSummary {
            deployments: self.deployments.len(),
            replica_sets: self.sets.len(),
            work: self.workers.stats(),
        }
    }
}

impl Handler<Reflected<Deployment>> for DeploymentController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Deployment>, ctx: &mut Context<Self>) {
        let Some(u) = self.deployments_view.accept(msg, ctx) else {
            return;
        };
        for d in self.deployments.apply(u) {
            self.workers.add(handlers::on_deployment(&d));
        }
        self.work(ctx);
    }
}

impl Handler<Reflected<ReplicaSet>> for DeploymentController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<ReplicaSet>, ctx: &mut Context<Self>) {
        let Some(u) = self.sets_view.accept(msg, ctx) else {
            return;
        };
        for d in self.sets.apply(u) {
            for key in handlers::on_replica_set(&d, &self.deployments) {
                self.workers.add(key);
            }
        }
        self.work(ctx);
    }
}

impl Handler<Reflected<Pod>> for DeploymentController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        let Some(u) = self.pods_view.accept(msg, ctx) else {
            return;
        };
        for key in handlers::on_pod(&u, &self.sets, &self.deployments) {
            self.workers.add(key);
        }
        self.work(ctx);
    }
}
