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
//! It is a [`Reconciler`] run by the machinery's [`Controller`]: no messages of its own.
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
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::Recipient;
use podvisor_client::{Client, ListParams};
use podvisor_core::ObjectKey;
use podvisor_machinery::cache::Delta;
use podvisor_machinery::controller::{
    Controller, Effects, Event, Reconciler, SyncError, Watches, World,
};
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::reflector::Update;
use serde::Serialize;

pub use plan::{Plan, plan};
pub use util::{HASH_LABEL, REVISION, template_hash};
pub use world::{Scaled, Write};

/// Syncs under way at once (kube-controller-manager runs five workers).
pub const WORKERS: usize = 4;

/// The Deployment controller: the runtime around [`Deployments`].
pub type DeploymentController = Controller<Deployments>;

/// The Deployment controller, run by the machinery.
pub fn controller(client: Client, events: Recipient<RecordEvent>) -> DeploymentController {
    Controller::new(Deployments, client, events, WORKERS)
}

/// The Deployment controller keeps nothing of its own: every step is decided from the
/// caches.
pub struct Deployments;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentCounts {}

impl Reconciler for Deployments {
    const KIND: &'static str = "deployment-controller";
    type Root = Deployment;
    type Owned = ReplicaSet;
    /// Pods, watched for Recreate's sake and not kept: what a sync needs of them it lists.
    type Trigger = Pod;
    type Report = sync::Report;
    type Counts = DeploymentCounts;

    fn watches(&self) -> Watches {
        Watches {
            trigger: Some(ListParams::default()),
            ..Watches::default()
        }
    }

    fn on_root(&mut self, _: &Delta<Deployment>, _: &World<Self>, _: &mut Effects) {}

    fn on_owned(&mut self, d: &Delta<ReplicaSet>, w: &World<Self>, fx: &mut Effects) {
        for key in handlers::on_replica_set(d, &w.roots) {
            fx.sync(key);
        }
    }

    fn on_trigger(&mut self, u: &Update<Pod>, w: &World<Self>, fx: &mut Effects) {
        for key in handlers::on_pod(u, &w.owned, &w.roots) {
            fx.sync(key);
        }
    }

    fn reconcile(
        &mut self,
        key: &ObjectKey,
        d: Arc<Deployment>,
        w: &World<Self>,
        _: &mut Effects,
    ) -> Option<LocalBoxFuture<'static, sync::Report>> {
        let ns = key.namespace.as_deref().unwrap_or_default();
        let sets: Vec<Arc<ReplicaSet>> = w.owned.in_namespace(ns).cloned().collect();
        let now_ms = podvisor_core::time::now().0.as_millisecond();
        Some(Box::pin(sync::run(w.client.clone(), d, sets, now_ms)))
    }

    fn reconciled(
        &mut self,
        key: &ObjectKey,
        report: sync::Report,
        _: &World<Self>,
        fx: &mut Effects,
    ) -> Result<Option<Duration>, SyncError> {
        for s in &report.scaled {
            fx.event(key, Event::normal("ScalingReplicaSet", s.message()));
        }
        report.error.map_or(Ok(report.requeue), Err)
    }

    fn counts(&self) -> DeploymentCounts {
        DeploymentCounts {}
    }
}
