//! The ReplicaSet controller actor (kind `replicaset-controller`): keeps each ReplicaSet's
//! declared number of pods running on this node, the way kube-controller-manager's does in
//! a cluster, on the shared controller machinery:
//!
//! - the controller runtime's informers (ReplicaSets; this node's pods indexed by their
//!   controller's UID; and this Node, not cached) feed event handlers (`handlers.rs`) that say
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
//! It is a [`Reconciler`] run by the machinery's [`Controller`]: no messages of its own.
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
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::Recipient;
use podvisor_client::{Client, ListParams};
use podvisor_core::{ObjectKey, PodUid};
use podvisor_machinery::cache::{Cache, Delta};
use podvisor_machinery::controller::{
    Controller, Effects, Event, Reconciler, SyncError, Watches, World,
};
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::reflector::Update;
use serde::Serialize;
use tracing::debug;

pub use handlers::{Enqueue, RsExpectations, on_pod, on_replica_set, owner};
pub use plan::{BURST, Manage, Plan, batches, plan};
pub use pods::{from_template, selector_string, selects};
pub use rank::{DELETION_COST, compare as deletion_order, deletion_cost, to_delete};
pub use status::{ManageError, compute as compute_status, next_availability};
pub use sync::Report;

/// Syncs under way at once (kube-controller-manager runs five workers).
pub const WORKERS: usize = 4;

/// The ReplicaSet controller: the runtime around [`ReplicaSets`].
pub type ReplicaSetController = Controller<ReplicaSets>;

/// The ReplicaSet controller of the node `node`, run by the machinery.
pub fn controller(
    node: &str,
    client: Client,
    events: Recipient<RecordEvent>,
) -> ReplicaSetController {
    Controller::new(ReplicaSets::new(node), client, events, WORKERS)
}

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

/// The ReplicaSet controller's own state: its expectations and counts.
pub struct ReplicaSets {
    node: String,
    expectations: RsExpectations,
    created: u64,
    deleted: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaSetCounts {
    /// ReplicaSets whose creates or deletes have not all come back through the watch.
    pub pending_expectations: usize,
    pub created: u64,
    pub deleted: u64,
}

fn enqueue(fx: &mut Effects, items: Vec<Enqueue>) {
    for e in items {
        fx.sync_after(e.key, e.after);
    }
}

impl ReplicaSets {
    pub fn new(node: &str) -> Self {
        Self {
            node: node.to_string(),
            expectations: RsExpectations::new(),
            created: 0,
            deleted: 0,
        }
    }

    fn expect(&mut self, key: &ObjectKey, manage: &Manage) {
        match manage {
            Manage::Create(n) => self.expectations.expect_creations(key.clone(), *n),
            Manage::Delete(pods) => {
                let uids = pods
                    .iter()
                    .map(|p| PodUid::from(p.metadata.uid.as_deref().unwrap_or("")));
                self.expectations.expect_deletions(key.clone(), uids);
            }
            Manage::Nothing => {}
        }
    }

    fn events(key: &ObjectKey, r: &Report, fx: &mut Effects) {
        crate::owners::pod_events(fx, key, &r.created, &r.deleted);
        match &r.manage_error {
            Some(e) if e.reason == "FailedCreate" => fx.event(
                key,
                Event::warning(e.reason, format!("Error creating: {}", e.message)),
            ),
            Some(e) => fx.event(
                key,
                Event::warning(e.reason, format!("Error deleting: {}", e.message)),
            ),
            None => {}
        }
    }
}

impl Reconciler for ReplicaSets {
    const KIND: &'static str = "replicaset-controller";
    type Root = ReplicaSet;
    type Owned = Pod;
    /// The node: when it changes (a taint removed, uncordoned), refused creates may pass.
    type Trigger = Node;
    type Report = Report;
    type Counts = ReplicaSetCounts;

    fn watches(&self) -> Watches {
        Watches {
            roots: ListParams::default(),
            owned: ListParams::default().field_equals("spec.nodeName", &self.node),
            trigger: Some(ListParams::default().field_equals("metadata.name", &self.node)),
        }
    }

    fn owned_cache(&self) -> Cache<Pod> {
        Cache::new()
            .with_index(controller_uid)
            .with_filter(may_be_a_replicasets)
    }

    fn on_root(&mut self, d: &Delta<ReplicaSet>, _: &World<Self>, fx: &mut Effects) {
        enqueue(fx, on_replica_set(d, &mut self.expectations));
    }

    fn on_owned(&mut self, d: &Delta<Pod>, w: &World<Self>, fx: &mut Effects) {
        enqueue(fx, on_pod(d, &w.roots, &mut self.expectations));
    }

    fn on_trigger(&mut self, _: &Update<Node>, w: &World<Self>, fx: &mut Effects) {
        enqueue(fx, handlers::failing(&w.roots));
    }

    fn reconcile(
        &mut self,
        key: &ObjectKey,
        rs: Arc<ReplicaSet>,
        w: &World<Self>,
        _: &mut Effects,
    ) -> Option<LocalBoxFuture<'static, Report>> {
        let may_manage = self.expectations.satisfied(key);
        let now = podvisor_core::time::now();
        let ns = key.namespace.clone().unwrap_or_default();
        let plan = plan::plan(
            &rs,
            w.owned.in_namespace(&ns),
            may_manage,
            now.0.as_nanosecond(),
        );
        self.expect(key, &plan.manage);
        debug!(replicaset = %key, manage = ?plan.manage_summary(), "sync");
        let client = w.client.clone();
        let work = sync::run(client, key.clone(), rs, plan, now.0.as_millisecond());
        Some(Box::pin(work))
    }

    fn reconciled(
        &mut self,
        key: &ObjectKey,
        report: Report,
        w: &World<Self>,
        fx: &mut Effects,
    ) -> Result<Option<Duration>, SyncError> {
        for _ in 0..report.skipped {
            self.expectations.creation_observed(key);
        }
        for uid in &report.failed_deletes {
            self.expectations.deletion_observed(key, uid);
        }
        self.created += report.created.len() as u64;
        self.deleted += report.deleted.len() as u64;
        Self::events(key, &report, fx);
        if let Some(rs) = w.roots.get(key) {
            let uid = rs.metadata.uid.as_deref().unwrap_or_default();
            let owned: Vec<Arc<Pod>> = w
                .owned
                .indexed(uid)
                .filter(|p| pods::is_active(p))
                .cloned()
                .collect();
            let now_ms = podvisor_core::time::now().0.as_millisecond();
            if let Some(after) = status::next_availability(rs, &owned, now_ms) {
                fx.sync_after(key.clone(), after);
            }
        }
        report.error.map_or(Ok(None), Err)
    }

    fn counts(&self) -> ReplicaSetCounts {
        ReplicaSetCounts {
            pending_expectations: self.expectations.pending(),
            created: self.created,
            deleted: self.deleted,
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
