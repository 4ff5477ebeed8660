//! The ReplicaSet controller actor (kind `replicaset-controller`): keeps each ReplicaSet's
//! declared number of pods running on this node, the way kube-controller-manager's does in
//! a cluster, on the shared controller machinery:
//!
//! - informers (reflectors into typed caches: ReplicaSets, and this node's pods indexed by
//!   their controller's UID; and this Node) feed event handlers (`handlers.rs`) that say
//!   which ReplicaSets to sync and which expectations a change meets. Only pods bound to
//!   this node are seen: they are the ones that run, every pod the controller makes is
//!   bound here, and the cache stays as small as the node (a pod stored for another node
//!   is neither counted as a replica nor adopted);
//! - a work queue of ReplicaSet keys (deduplicated, one sync per key at a time, failures
//!   retried with client-go's rate limiter) drives up to four syncs at once;
//! - a sync plans from the caches (`plan.rs`: adopt matching orphans, release pods that
//!   stopped matching, create or delete the difference, the deletion order of `rank.rs`),
//!   sets its expectations, and carries the plan out against the store (`sync.rs`: slow-start
//!   creates, deletes, the status of `status.rs`), then records Events and retries on error.
//!
//! Messages: none of its own; it handles its reflectors' [`Reflected`] deliveries.
//!
//! Restart: nothing is kept. The caches are listed again, the queue starts with every
//! ReplicaSet, and the expectations start empty: what a crashed instance created is in the
//! store, so the new one counts it and creates nothing twice.

mod handlers;
mod plan;
mod pods;
mod rank;
mod status;
mod sync;

use std::sync::Arc;

use actix::prelude::*;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::due;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, ListParams};
use podvisor_core::{EventType, ObjectKey, PodUid};
use podvisor_machinery::cache::Cache;
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::reflector::{Reflected, Reflector};
use podvisor_machinery::workers::{Outcome, WorkStats, Workers};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{debug, warn};

pub use handlers::{Enqueue, RsExpectations, on_pod, on_replica_set, owner};
pub use plan::{BURST, Manage, Plan, batches, plan};
pub use pods::{from_template, selector_string, selects};
pub use rank::{DELETION_COST, compare as deletion_order, deletion_cost, to_delete};
pub use status::{ManageError, compute as compute_status, next_availability};
pub use sync::Report;

/// Syncs under way at once (kube-controller-manager runs five workers).
pub const WORKERS: usize = 4;

/// A pod's controller UID: the pods cache's index.
fn controller_uid(p: &Pod) -> Option<String> {
    pods::controller_of(p).map(|r| r.uid.clone())
}

/// A pod some other controller (a Node, for a mirror pod) controls is never a
/// ReplicaSet's to count or adopt: it is not held (500 mirror pods, typed, were some
/// 4 MiB of the agent's memory).
fn may_be_a_replicasets(p: &Pod) -> bool {
    pods::controller_of(p).is_none_or(|r| r.kind == "ReplicaSet")
}

pub struct ReplicaSetController {
    sets_view: Reflector<ReplicaSet>,
    pods_view: Reflector<Pod>,
    /// The node: when it changes (a taint removed, uncordoned), refused creates may pass.
    nodes_view: Reflector<Node>,
    sets: Cache<ReplicaSet>,
    pods: Cache<Pod>,
    workers: Workers<ObjectKey>,
    expectations: RsExpectations,
    client: Client,
    events: Recipient<RecordEvent>,
    created: u64,
    deleted: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaSetControllerSummary {
    pub replica_sets: usize,
    pub pods: usize,
    #[serde(flatten)]
    pub work: WorkStats,
    /// ReplicaSets whose creates or deletes have not all come back through the watch.
    pub pending_expectations: usize,
    pub created: u64,
    pub deleted: u64,
}

impl ReplicaSetController {
    pub fn new(node: &str, client: Client, events: Recipient<RecordEvent>) -> Self {
        let bound_here = ListParams::default().field_equals("spec.nodeName", node);
        let this_node = ListParams::default().field_equals("metadata.name", node);
        Self {
            sets_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            pods_view: Reflector::new(Api::all(client.clone()), bound_here),
            nodes_view: Reflector::new(Api::all(client.clone()), this_node),
            sets: Cache::new(),
            pods: Cache::new()
                .with_index(controller_uid)
                .with_filter(may_be_a_replicasets),
            workers: Workers::new(WORKERS),
            expectations: RsExpectations::new(),
            client,
            events,
            created: 0,
            deleted: 0,
        }
    }

    fn enqueue(&mut self, items: Vec<Enqueue>) {
        for e in items {
            self.workers.add_after(e.key, e.after);
        }
    }

    fn on_delayed(&mut self, key: ObjectKey, _: Instant, ctx: &mut Context<Self>) {
        self.workers.add(key);
        self.work(ctx);
    }

    /// Starts syncs while there is room and work (once both caches are filled).
    fn work(&mut self, ctx: &mut Context<Self>) {
        if !self.sets_view.synced || !self.pods_view.synced {
            return;
        }
        while let Some(key) = self.workers.start() {
            self.sync(key, ctx);
        }
    }

    fn sync(&mut self, key: ObjectKey, ctx: &mut Context<Self>) {
        let Some(rs) = self.sets.get(&key).cloned() else {
            self.expectations.forget(&key);
            self.workers.skip(&key);
            return;
        };
        let may_manage = self.expectations.satisfied(&key);
        let now = podvisor_core::time::now();
        let ns = key.namespace.clone().unwrap_or_default();
        let plan = plan::plan(
            &rs,
            self.pods.in_namespace(&ns),
            may_manage,
            now.0.as_nanosecond(),
        );
        match &plan.manage {
            Manage::Create(n) => self.expectations.expect_creations(key.clone(), *n),
            Manage::Delete(pods) => {
                let uids = pods
                    .iter()
                    .map(|p| PodUid::from(p.metadata.uid.as_deref().unwrap_or("")));
                self.expectations.expect_deletions(key.clone(), uids);
            }
            Manage::Nothing => {}
        }
        debug!(replicaset = %key, manage = ?plan.manage_summary(), "sync");
        let work = sync::run(
            self.client.clone(),
            key.clone(),
            rs,
            plan,
            now.0.as_millisecond(),
        );
        ctx.spawn(work.into_actor(self).map(move |report, act, ctx| {
            act.synced(&key, report);
            act.work(ctx);
        }));
    }

    fn synced(&mut self, key: &ObjectKey, report: Report) {
        for _ in 0..report.skipped {
            self.expectations.creation_observed(key);
        }
        for uid in &report.failed_deletes {
            self.expectations.deletion_observed(key, uid);
        }
        self.created += report.created.len() as u64;
        self.deleted += report.deleted.len() as u64;
        self.report_events(key, &report);
        let failed = report
            .manage_error
            .as_ref()
            .map(|e| e.message.clone())
            .or(report.error);
        let outcome = match failed {
            Some(_) => Outcome::Failed,
            None => Outcome::Synced(None),
        };
        if let Some(delay) = self.workers.finished(key, outcome) {
            let why = failed.unwrap_or_default();
            warn!(replicaset = %key, error = %why, retry_in = ?delay, "sync failed; trying again");
        }
        if let Some(rs) = self.sets.get(key).cloned() {
            let uid = rs.metadata.uid.clone().unwrap_or_default();
            let owned: Vec<Arc<Pod>> = self
                .pods
                .indexed(&uid)
                .filter(|p| pods::is_active(p))
                .cloned()
                .collect();
            let now_ms = podvisor_core::time::now().0.as_millisecond();
            if let Some(after) = status::next_availability(&rs, &owned, now_ms) {
                self.workers.add_after(key.clone(), after);
            }
        }
    }

    fn report_events(&self, key: &ObjectKey, r: &Report) {
        let uid = self.sets.get(key).and_then(|rs| rs.metadata.uid.clone());
        let mut object = key.clone();
        object.uid = uid.as_deref().map(podvisor_core::Uid::from);
        let send = |type_, reason: &str, message: String| {
            self.events.do_send(RecordEvent {
                object: object.clone(),
                type_,
                reason: reason.into(),
                message,
            });
        };
        for name in &r.created {
            send(
                EventType::Normal,
                "SuccessfulCreate",
                format!("Created pod: {name}"),
            );
        }
        for name in &r.deleted {
            send(
                EventType::Normal,
                "SuccessfulDelete",
                format!("Deleted pod: {name}"),
            );
        }
        match &r.manage_error {
            Some(e) if e.reason == "FailedCreate" => send(
                EventType::Warning,
                e.reason,
                format!("Error creating: {}", e.message),
            ),
            Some(e) => send(
                EventType::Warning,
                e.reason,
                format!("Error deleting: {}", e.message),
            ),
            None => {}
        }
    }
}

impl Plan {
    /// `create 3`, `delete 2`, `-`: for logs.
    pub fn manage_summary(&self) -> String {
        match &self.manage {
            Manage::Nothing => "-".into(),
            Manage::Create(n) => format!("create {n}"),
            Manage::Delete(p) => format!("delete {}", p.len()),
        }
    }
}

impl Actor for ReplicaSetController {
    type Context = Context<Self>;
}

impl SupervisedActor for ReplicaSetController {
    const KIND: &'static str = "replicaset-controller";
    type Summary = ReplicaSetControllerSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.sets_view.start(ctx, start.me.recipient());
        self.pods_view.start(ctx, start.me.recipient());
        self.nodes_view.start(ctx, start.me.recipient());
        due::drive(ctx, |a: &mut Self| a.workers.delayed(), Self::on_delayed);
    }

    fn summary(&self) -> ReplicaSetControllerSummary {
        ReplicaSetControllerSummary {
            replica_sets: self.sets.len(),
            pods: self.pods.len(),
            work: self.workers.stats(),
            pending_expectations: self.expectations.pending(),
            created: self.created,
            deleted: self.deleted,
        }
    }
}

impl Handler<Reflected<ReplicaSet>> for ReplicaSetController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<ReplicaSet>, ctx: &mut Context<Self>) {
        let Some(u) = self.sets_view.accept(msg, ctx) else {
            return;
        };
        let deltas = self.sets.apply(u);
        let keys = deltas
            .iter()
            .flat_map(|d| on_replica_set(d, &mut self.expectations))
            .collect();
        self.enqueue(keys);
        self.work(ctx);
    }
}

impl Handler<Reflected<Node>> for ReplicaSetController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Node>, ctx: &mut Context<Self>) {
        if self.nodes_view.accept(msg, ctx).is_some() {
            self.enqueue(handlers::failing(&self.sets));
            self.work(ctx);
        }
    }
}

impl Handler<Reflected<Pod>> for ReplicaSetController {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        let Some(u) = self.pods_view.accept(msg, ctx) else {
            return;
        };
        let deltas = self.pods.apply(u);
        let keys = deltas
            .iter()
            .flat_map(|d| on_pod(d, &self.sets, &mut self.expectations))
            .collect();
        self.enqueue(keys);
        self.work(ctx);
    }
}
