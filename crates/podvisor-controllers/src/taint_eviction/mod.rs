//! The taint eviction scheduler actor (kind `taint-eviction`): Kubernetes' NoExecute taint
//! manager for this node, without its timer bugs.
//!
//! It watches this node's Node object and the pods bound to it (two reflectors), and keeps
//! for each pod the moment it must go (`deadline.rs`), in one delay queue
//! (`scheduler.rs`): nothing runs while nothing is due. Every change of the node's taints
//! or of a pod's tolerations recomputes the deadlines it touches, so a deadline moves
//! earlier or later with them, and a countdown is cancelled once nothing needs it.
//! Deadlines count from each taint's `timeAdded` (stamped by the store when the taint
//! appeared), so a restarted scheduler, after a crash or an agent restart, computes the
//! same deadline and never restarts a countdown.
//!
//! When a pod's time comes the eviction (`evict.rs`) takes a last look at the API's
//! current node and pod, then sets the pod's `DisruptionTarget` condition and deletes it
//! gracefully; the node agent stops it with its grace period. An Event says so
//! (`TaintManagerEviction`), and another when a countdown is cancelled. A failed eviction
//! is tried again with backoff, never dropped. Static pods (their mirrors) are never
//! evicted: the file is the truth; the scheduler says once that it would have.
//!
//! Messages: none of its own; it handles its reflectors' [`Reflected`] deliveries (nodes
//! and pods).

mod deadline;
mod evict;
mod scheduler;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::due;
use podvisor_actors::histogram::{Histogram, LatencySummary};
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, Error, ListParams, WatchEvent};
use podvisor_core::{EventType, ObjectKey, PodUid};
use podvisor_machinery::events::RecordEvent;
use podvisor_machinery::reflector::{Reflected, Reflector, Update};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

pub use deadline::{Deadline, TimedTaint, deadline as pod_deadline};
pub use evict::Outcome;
pub use scheduler::{Due, PodView, Scheduler};

use crate::clock::WallClock;

const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// Evictions under way at once; more wait their turn in order. Each is four API round
/// trips, two of them durable writes: a thousand at once would all finish late, a few at
/// a time finish in deadline order.
const MAX_IN_FLIGHT: usize = 8;
const REANCHOR: Duration = Duration::from_secs(60);

pub struct TaintEviction {
    node: String,
    node_view: Reflector<Node>,
    pods_view: Reflector<Pod>,
    scheduler: Scheduler,
    client: Client,
    events: Recipient<RecordEvent>,
    in_flight: HashSet<ObjectKey>,
    /// Due, waiting for a place among those in flight.
    backlog: VecDeque<(ObjectKey, PodUid, String)>,
    /// Evicted, not yet seen deleting through the watch: not evicted again meanwhile.
    evicted_uids: HashMap<ObjectKey, PodUid>,
    retry_after: HashMap<ObjectKey, Duration>,
    /// How late each eviction's timer fired after its deadline.
    lateness: Histogram,
    evicted: u64,
    failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaintEvictionSummary {
    /// Pods with a countdown (or a retry) pending.
    pub pending: usize,
    /// Due, waiting for a place among the evictions in flight.
    pub backlog: usize,
    /// Milliseconds until the soonest of them.
    pub next_in_ms: Option<u64>,
    pub in_flight: usize,
    pub evicted: u64,
    pub failed: u64,
    /// How late the timers of evictions fired after their deadlines.
    pub lateness: LatencySummary,
}

impl TaintEviction {
    pub fn new(node: String, client: Client, events: Recipient<RecordEvent>) -> Self {
        let this_node = ListParams::default().field_equals("metadata.name", &node);
        let bound_here = ListParams::default().field_equals("spec.nodeName", &node);
        Self {
            node_view: Reflector::new(Api::all(client.clone()), this_node),
            pods_view: Reflector::new(Api::all(client.clone()), bound_here),
            node,
            scheduler: Scheduler::new(WallClock::system()),
            client,
            events,
            in_flight: HashSet::new(),
            backlog: VecDeque::new(),
            evicted_uids: HashMap::new(),
            retry_after: HashMap::new(),
            lateness: Histogram::default(),
            evicted: 0,
            failed: 0,
        }
    }

    fn record(
        &self,
        key: &ObjectKey,
        uid: Option<&PodUid>,
        type_: EventType,
        reason: &str,
        message: String,
    ) {
        let mut object = key.clone();
        object.uid = uid.map(|u| podvisor_core::Uid::from(u.as_str()));
        self.events.do_send(RecordEvent {
            object,
            type_,
            reason: reason.into(),
            message,
        });
    }

    fn cancelled(&self, keys: Vec<ObjectKey>) {
        for key in keys {
            let uid = self.scheduler.pod(&key).map(|p| p.uid.clone());
            info!(pod = %key, "taint eviction cancelled");
            let message = format!(
                "Cancelling deletion of Pod {}/{}",
                key.namespace.as_deref().unwrap_or(""),
                key.name
            );
            self.record(
                &key,
                uid.as_ref(),
                EventType::Normal,
                "TaintManagerEviction",
                message,
            );
        }
    }

    fn on_node(&mut self, update: Update<Node>) {
        let node = match update {
            Update::Reset(items) => items.into_iter().next(),
            Update::Change(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => None,
            Update::Change(WatchEvent::Added(n) | WatchEvent::Modified(n)) => Some(n),
        };
        let cancelled = self.scheduler.set_node(node.as_deref());
        self.cancelled(cancelled);
    }

    fn on_pods(&mut self, update: Update<Pod>) {
        let cancelled = match update {
            Update::Reset(items) => self
                .scheduler
                .reset_pods(items.iter().filter_map(|p| PodView::of(p)).collect()),
            Update::Change(WatchEvent::Deleted(p)) => {
                let m = &p.metadata;
                let key = ObjectKey::pod(
                    m.namespace.as_deref().unwrap_or_default(),
                    m.name.as_deref().unwrap_or_default(),
                );
                self.scheduler.remove_pod(&key);
                self.retry_after.remove(&key);
                self.evicted_uids.remove(&key);
                Vec::new()
            }
            Update::Change(WatchEvent::Bookmark(_)) => Vec::new(),
            Update::Change(WatchEvent::Added(p) | WatchEvent::Modified(p)) => match PodView::of(&p)
            {
                Some((key, v)) => {
                    if v.deleting || self.evicted_uids.get(&key).is_some_and(|u| *u != v.uid) {
                        self.evicted_uids.remove(&key);
                    }
                    let was = self.scheduler.set_pod(key.clone(), v);
                    if was { vec![key] } else { Vec::new() }
                }
                None => Vec::new(),
            },
        };
        self.cancelled(cancelled);
    }

    /// A timer fired.
    fn on_due(&mut self, key: ObjectKey, at: Instant, ctx: &mut Context<Self>) {
        let evicted = self.evicted_uids.get(&key);
        let done = evicted.is_some_and(|u| self.scheduler.pod(&key).is_some_and(|p| p.uid == *u));
        let queued = self.backlog.iter().any(|(k, _, _)| *k == key);
        if self.in_flight.contains(&key) || queued || done {
            return;
        }
        let late = Instant::now().saturating_duration_since(at);
        match self.scheduler.fired(key) {
            None => {}
            Some(Due::WouldEvictStatic { key, uid, cause }) => {
                warn!(pod = %key, taint = %cause, "a static pod does not tolerate a NoExecute taint; not evicted (its manifest file is the truth)");
                let message = format!(
                    "Not deleting static Pod {}: it does not tolerate the taint {cause}, but its manifest file is the truth",
                    key.name
                );
                self.record(
                    &key,
                    Some(&uid),
                    EventType::Warning,
                    "TaintManagerEviction",
                    message,
                );
            }
            Some(Due::Evict { key, uid, cause }) => {
                self.lateness.record(late);
                self.evict(key, uid, cause, ctx);
            }
        }
    }

    fn evict(&mut self, key: ObjectKey, uid: PodUid, cause: String, ctx: &mut Context<Self>) {
        if self.in_flight.len() >= MAX_IN_FLIGHT {
            self.backlog.push_back((key, uid, cause));
            return;
        }
        self.in_flight.insert(key.clone());
        let work = evict::evict(
            self.client.clone(),
            self.node.clone(),
            key.clone(),
            uid.clone(),
            *self.scheduler.clock(),
        );
        ctx.spawn(work.into_actor(self).map(move |r, act, ctx| {
            act.in_flight.remove(&key);
            act.evicted_or_not(key, uid, cause, r);
            if let Some((key, uid, cause)) = act.backlog.pop_front() {
                act.evict(key, uid, cause, ctx);
            }
        }));
    }

    fn evicted_or_not(
        &mut self,
        key: ObjectKey,
        uid: PodUid,
        cause: String,
        r: Result<Outcome, Error>,
    ) {
        match r {
            Ok(Outcome::Evicted) => {
                self.evicted += 1;
                self.retry_after.remove(&key);
                self.evicted_uids.insert(key.clone(), uid.clone());
                info!(pod = %key, pod_uid = %uid, taint = %cause, "pod evicted for a NoExecute taint");
                let message = format!(
                    "Marking for deletion Pod {}/{}",
                    key.namespace.as_deref().unwrap_or(""),
                    key.name
                );
                self.record(
                    &key,
                    Some(&uid),
                    EventType::Normal,
                    "TaintManagerEviction",
                    message,
                );
            }
            Ok(Outcome::Gone | Outcome::AlreadyDeleting | Outcome::NotDue(None)) => {}
            Ok(Outcome::NotDue(Some(ms))) => self.scheduler.schedule_at(key, ms),
            Err(e) => {
                self.failed += 1;
                let delay = self
                    .retry_after
                    .get(&key)
                    .map_or(RETRY_FIRST, |d| (*d * 2).min(RETRY_MAX));
                warn!(pod = %key, error = %e, retry_in = ?delay, "eviction failed; trying again");
                self.retry_after.insert(key.clone(), delay);
                self.scheduler.retry(key, delay);
            }
        }
    }
}

impl Actor for TaintEviction {
    type Context = Context<Self>;
}

impl SupervisedActor for TaintEviction {
    const KIND: &'static str = "taint-eviction";
    type Summary = TaintEvictionSummary;

    /// Nothing survives a restart but the API: list the node and the pods again and
    /// recompute every deadline from the taints' `timeAdded`.
    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.scheduler = Scheduler::new(WallClock::system());
        self.node_view.start(ctx, start.me.recipient());
        self.pods_view.start(ctx, start.me.recipient());
        // Deadlines are wall times (a taint's timeAdded) on tokio's clock: anchor again
        // now and then, so a suspended machine or a stepped clock cannot skew them for long.
        ctx.run_interval(REANCHOR, |act, _| {
            act.scheduler.reanchor(WallClock::system())
        });
        due::drive(ctx, |a: &mut Self| a.scheduler.queue(), Self::on_due);
    }

    fn summary(&self) -> TaintEvictionSummary {
        let now = Instant::now();
        TaintEvictionSummary {
            pending: self.scheduler.pending(),
            next_in_ms: self.scheduler.next_deadline().map(|at| {
                u64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
            }),
            in_flight: self.in_flight.len(),
            backlog: self.backlog.len(),
            evicted: self.evicted,
            failed: self.failed,
            lateness: self.lateness.snapshot().summary(),
        }
    }
}

impl Handler<Reflected<Node>> for TaintEviction {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Node>, ctx: &mut Context<Self>) {
        if let Some(u) = self.node_view.accept(msg, ctx) {
            self.on_node(u);
        }
    }
}

impl Handler<Reflected<Pod>> for TaintEviction {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        if let Some(u) = self.pods_view.accept(msg, ctx) {
            self.on_pods(u);
        }
    }
}
