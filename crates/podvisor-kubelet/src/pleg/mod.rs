//! The PLEG (pod lifecycle event generator) actor: turns the runtime's state into pod
//! lifecycle events for the sync loop and keeps the status cache current.
//!
//! Relisting (`relist.rs`): every `relist_period`, list every sandbox and container, diff
//! each pod against the previous relist (`records.rs`), inspect the pods that changed,
//! store their status in the cache, emit their events, then tell the cache that every pod
//! is at least as fresh as the relist's start. A failed inspection emits nothing and is
//! retried next time. `Reinspect` does the same for one pod at once: the pod worker asks
//! for it after a sync, so it need not wait a relist period for fresh status.
//!
//! Evented mode (`events.rs`) consumes the runtime's container event stream and keeps a
//! safety relist; a runtime that cannot stream (containerd 1.6 answers `Unimplemented`)
//! puts it back into relisting at once, and the stream is tried again now and then (and
//! when the runtime comes back after an outage), so a runtime upgraded to one that streams
//! is used. Every (re)opened stream is followed by a relist, which finds what happened
//! while there was none. Relists that find changes the stream did not deliver mark it
//! lossy (`loss.rs`): relisting then runs at the normal period beside it.
//!
//! With `node` set, only the runtime pods labelled as this node's are tracked: events and
//! listings of pods another agent owns on the same runtime are ignored.
//!
//! Relists and inspections run in `ctx.wait`, one at a time: messages that arrive meanwhile
//! wait their turn, so records never see two diffs interleave. Each inspection waited for
//! is bounded (`inspect_timeout`): a pod whose inspection hangs the runtime is inspected
//! aside from then on (`slow.rs`), so it cannot hold up everyone else's status.

mod events;
mod health;
mod kept;
mod loss;
mod pending;
mod records;
mod relist;
mod slow;
mod snapshot;
mod stream;
mod summary;
mod witness;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::PodUid;
use podvisor_cri::{CriError, PodStatus, Runtime};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, info, warn};

pub use health::PlegHealth;
use loss::LossDetector;
use pending::EventQueue;
pub use records::PodRecords;
use records::{record_from_status, translate};
use stream::StreamTracker;
pub use summary::PlegSummary;
pub use witness::WAIT as START_EVENT_WAIT;

use crate::protocol::cache::{ContainerId, SetStatus, UpdateTime};
use crate::protocol::lifecycle::{
    PlegError, PodLifecycleEvent, Reinspect, RelistNow, RelistReport,
};

/// How the PLEG learns of changes. As a setting, `Evented` means "the runtime's event
/// stream where the runtime has one" (`auto` is accepted for it): on a runtime that cannot
/// stream it relists, and says `relist` in its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlegMode {
    Relist,
    #[serde(alias = "auto")]
    Evented,
}

#[derive(Debug, Clone)]
pub struct PlegConfig {
    pub relist_period: Duration,
    pub health_threshold: Duration,
    pub mode: PlegMode,
    /// Failed attempts at the event stream before falling back to relisting.
    pub max_stream_retries: u32,
    /// The relist that keeps running under evented mode, as a safety net.
    pub safety_relist_period: Duration,
    /// Pods inspected at once during a relist.
    pub inspect_concurrency: usize,
    /// How often a PLEG that fell back to relisting tries the event stream again.
    pub stream_probe_period: Duration,
    /// How long the PLEG waits for one pod's inspection before it inspects that pod aside
    /// (`slow.rs`).
    pub inspect_timeout: Duration,
    /// Whether an event's own statuses settle it when they are its pod's whole status
    /// (`snapshot.rs`); `false`: every event is followed by its pod's inspection.
    pub event_snapshots: bool,
    /// The node whose runtime pods are tracked (`labels::owned_by`); `None`: every pod.
    pub node: Option<String>,
    /// The kubelet's `kubelet_pleg_*`, `kubelet_running_pods` and
    /// `kubelet_running_containers`.
    pub metrics: crate::metrics::Metrics,
}

impl Default for PlegConfig {
    fn default() -> Self {
        Self {
            relist_period: Duration::from_secs(1),
            health_threshold: Duration::from_secs(180),
            mode: PlegMode::Evented,
            max_stream_retries: 5,
            safety_relist_period: Duration::from_secs(10),
            inspect_concurrency: 8,
            stream_probe_period: Duration::from_secs(60),
            inspect_timeout: Duration::from_secs(2),
            event_snapshots: true,
            node: None,
            metrics: crate::metrics::Metrics::default(),
        }
    }
}

/// The status cache, as the PLEG sees it.
#[derive(Clone)]
pub struct CacheHandle {
    pub set: Recipient<SetStatus>,
    pub update_time: Recipient<UpdateTime>,
}

pub struct Pleg {
    runtime: Arc<dyn Runtime>,
    cache: CacheHandle,
    subscribers: Vec<Recipient<PodLifecycleEvent>>,
    config: PlegConfig,
    health: Arc<PlegHealth>,
    records: PodRecords,
    reinspect: BTreeSet<PodUid>,
    /// Pods whose inspection hangs the runtime (`slow.rs`), and those of them with an
    /// inspection in flight.
    slow: BTreeSet<PodUid>,
    aside: BTreeSet<PodUid>,
    /// Container events waiting for their pod's inspection (`pending.rs`).
    pending: EventQueue,
    mode: PlegMode,
    /// Set for a fresh instance: its first relist inspects every pod (the cache may be a
    /// fresh, empty one).
    full_inspection: bool,
    interval: Option<SpawnHandle>,
    stream: StreamTracker,
    stream_handle: Option<SpawnHandle>,
    /// The timer that tries the stream again while relisting.
    probe_handle: Option<SpawnHandle>,
    /// Whether a judgement of the loss suspects is scheduled.
    judging: bool,
    /// When the current stream was opened; `None` without one.
    stream_opened: Option<Instant>,
    /// When the current stream surely had the subscription, in CRI nanoseconds.
    stream_live_ns: Option<i64>,
    loss: LossDetector,
    /// The period relists run at now (the safety period, or the normal one when relisting
    /// or when the stream lost events).
    period_now: Option<Duration>,
    events_received: u64,
    events_ignored: u64,
    /// Events settled from the statuses they carried, with no inspection.
    events_from_snapshots: u64,
    /// Workers' requests for an inspection that the records answered, and those waiting
    /// for their start's event (`witness.rs`).
    reinspections_spared: u64,
    awaiting: witness::Awaiting,
    list_failures: u32,
    /// Wall-clock time and duration (ms) of the last relist.
    last_relist: Option<(u64, f64)>,
    /// When the last successful relist began (`kubelet_pleg_relist_interval_seconds`).
    last_relist_start: Option<Instant>,
}

impl Pleg {
    pub fn new(
        runtime: Arc<dyn Runtime>,
        cache: CacheHandle,
        subscribers: Vec<Recipient<PodLifecycleEvent>>,
        config: PlegConfig,
        health: Arc<PlegHealth>,
    ) -> Self {
        Self {
            stream: StreamTracker::new(config.max_stream_retries),
            runtime,
            cache,
            subscribers,
            mode: config.mode,
            config,
            health,
            records: PodRecords::default(),
            reinspect: BTreeSet::new(),
            slow: BTreeSet::new(),
            aside: BTreeSet::new(),
            pending: EventQueue::default(),
            full_inspection: true,
            interval: None,
            stream_handle: None,
            probe_handle: None,
            judging: false,
            stream_opened: None,
            stream_live_ns: None,
            loss: LossDetector::default(),
            period_now: None,
            events_received: 0,
            events_ignored: 0,
            events_from_snapshots: 0,
            reinspections_spared: 0,
            awaiting: witness::Awaiting::default(),
            list_failures: 0,
            last_relist: None,
            last_relist_start: None,
        }
    }

    fn emit(&self, events: &[PodLifecycleEvent]) {
        for e in events {
            debug!(pod_uid = %e.uid, event = ?e.kind, id = %e.id, container = %e.container, "pod lifecycle event");
            for s in &self.subscribers {
                s.do_send(e.clone());
            }
        }
    }

    /// Hands a pod's status (or the inspection's error) to the cache; `false` if the cache
    /// refused it (the pod is inspected again).
    fn store(&mut self, uid: &PodUid, status: Result<PodStatus, CriError>, at: Instant) -> bool {
        let msg = SetStatus {
            uid: uid.clone(),
            status: status.map(kept::kept).map(Arc::new).map_err(Arc::new),
            at,
        };
        if self.cache.set.try_send(msg).is_err() {
            warn!(pod_uid = %uid, "status cache refused an update; will inspect again");
            self.reinspect.insert(uid.clone());
            return false;
        }
        true
    }

    /// Inspects one pod now, stores it, emits its events. A slow pod is inspected aside
    /// instead, and the answer is that it is.
    fn reinspect_pod(
        &mut self,
        uid: PodUid,
        ctx: &mut Context<Self>,
        done: oneshot::Sender<Result<(), PlegError>>,
    ) {
        let bound = self.config.inspect_timeout;
        if self.slow.contains(&uid) {
            self.inspect_slow(ctx);
            let error = CriError::Timeout {
                op: slow::OP,
                after: bound,
            };
            let _ = done.send(Err(PlegError::Inspect { uid, error }));
            return;
        }
        let started = Instant::now();
        let work = slow::inspect_bounded(self.runtime.clone(), uid.clone(), None, bound)
            .into_actor(self)
            .map(move |result, act, ctx| {
                if slow::gave_up(&result) {
                    act.store(&uid, result.clone(), started);
                    act.mark_slow(&uid, ctx);
                }
                let out = match result {
                    Ok(status) => {
                        act.settle_one(&uid, status, started, ctx);
                        Ok(())
                    }
                    Err(error) => {
                        act.reinspect.insert(uid.clone());
                        Err(PlegError::Inspect { uid, error })
                    }
                };
                let _ = done.send(out);
            });
        ctx.wait(work);
    }

    /// A pod inspected on its own: its records from this status, its events, the status
    /// stored.
    fn settle_one(
        &mut self,
        uid: &PodUid,
        status: PodStatus,
        started: Instant,
        ctx: &mut Context<Self>,
    ) {
        self.records.set_one(uid, record_from_status(&status));
        let events = self.records.events(uid);
        // A change seen here first (a container the worker just started) is owed by the
        // stream too.
        self.suspect(&events, started);
        self.after_relist(ctx);
        if self.store(uid, Ok(status), started) {
            self.emit(&events);
            self.records.update(uid);
            self.reinspect.remove(uid);
            self.start_seen(uid);
        }
    }

    /// Whether the pod's latest records show container `id` started, from a status that
    /// is in the cache and whose events went out (not one the cache refused, not a pod
    /// inspected aside).
    fn shows_started(&self, uid: &PodUid, id: &ContainerId) -> bool {
        !self.reinspect.contains(uid)
            && !self.slow.contains(uid)
            && self.records.shows_started(uid, id.as_str())
    }

    fn schedule_relists(&mut self, ctx: &mut Context<Self>, period: Duration) {
        if self.period_now == Some(period) {
            return;
        }
        if let Some(h) = self.interval.take() {
            ctx.cancel_future(h);
        }
        self.period_now = Some(period);
        self.interval = Some(ctx.run_interval(period, |act, ctx| act.relist(ctx, None)));
    }

    /// Whether the pod a runtime object belongs to is this node's (see `PlegConfig::node`).
    fn owns(&self, labels: &podvisor_cri::Labels) -> bool {
        self.config.node.as_deref().is_none_or(|node| {
            labels
                .get(podvisor_cri::labels::MANAGED_BY)
                .is_some_and(|v| v == node)
        })
    }
}

impl Actor for Pleg {
    type Context = Context<Self>;
}

impl SupervisedActor for Pleg {
    const KIND: &'static str = "pleg";
    type Summary = PlegSummary;

    /// A fresh PLEG knows nothing: it relists everything and inspects every pod, which
    /// also refills a cache that restarted with it. Its events are harmless (syncs are
    /// idempotent) and no pod is missed.
    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        if start.is_restart() {
            info!(
                restarts = start.restarts,
                "PLEG restarted; relisting everything"
            );
        }
        match self.mode {
            PlegMode::Relist => {
                self.relist(ctx, None);
                let period = self.config.relist_period;
                self.schedule_relists(ctx, period);
            }
            // Opening the stream relists (what happened before it opened).
            PlegMode::Evented => self.use_stream(ctx),
        }
    }

    fn summary(&self) -> PlegSummary {
        self.summarize()
    }
}

impl Handler<RelistNow> for Pleg {
    type Result = ResponseFuture<Result<RelistReport, PlegError>>;

    fn handle(&mut self, _: RelistNow, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.relist(ctx, Some(tx));
        Box::pin(async move { rx.await.unwrap_or(Err(PlegError::Stopped)) })
    }
}

impl Handler<Reinspect> for Pleg {
    type Result = ResponseFuture<Result<(), PlegError>>;

    fn handle(&mut self, msg: Reinspect, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        match msg.started {
            Some(id) => self.reinspect_after_start(msg.uid, id, ctx, tx),
            None => self.reinspect_pod(msg.uid, ctx, tx),
        }
        Box::pin(async move { rx.await.unwrap_or(Err(PlegError::Stopped)) })
    }
}
