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
//! slow safety relist; a runtime that cannot stream (containerd 1.6 answers
//! `Unimplemented`) puts it back into relisting at once.
//!
//! Relists and inspections run in `ctx.wait`, one at a time: messages that arrive meanwhile
//! wait their turn, so records never see two diffs interleave.

mod events;
mod health;
mod records;
mod relist;
mod stream;

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
pub use records::PodRecords;
use records::{record_from_status, translate};
use stream::StreamTracker;

use crate::protocol::cache::{SetStatus, UpdateTime};
use crate::protocol::lifecycle::{
    PlegError, PodLifecycleEvent, Reinspect, RelistNow, RelistReport,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlegMode {
    Relist,
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
}

impl Default for PlegConfig {
    fn default() -> Self {
        Self {
            relist_period: Duration::from_secs(1),
            health_threshold: Duration::from_secs(180),
            mode: PlegMode::Relist,
            max_stream_retries: 5,
            safety_relist_period: Duration::from_secs(300),
            inspect_concurrency: 8,
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
    mode: PlegMode,
    /// Set for a fresh instance: its first relist inspects every pod (the cache may be a
    /// fresh, empty one).
    full_inspection: bool,
    interval: Option<SpawnHandle>,
    stream: StreamTracker,
    stream_handle: Option<SpawnHandle>,
    list_failures: u32,
    /// Wall-clock time and duration (ms) of the last relist.
    last_relist: Option<(u64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlegSummary {
    pub mode: PlegMode,
    pub healthy: bool,
    pub last_relist_unix_ms: Option<u64>,
    pub last_relist_ms: Option<f64>,
    pub pods_tracked: usize,
    pub awaiting_reinspection: usize,
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
            full_inspection: true,
            interval: None,
            stream_handle: None,
            list_failures: 0,
            last_relist: None,
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
            status: status.map(Arc::new).map_err(Arc::new),
            at,
        };
        if self.cache.set.try_send(msg).is_err() {
            warn!(pod_uid = %uid, "status cache refused an update; will inspect again");
            self.reinspect.insert(uid.clone());
            return false;
        }
        true
    }

    /// Inspects one pod now, stores it, emits its events.
    fn reinspect_pod(
        &mut self,
        uid: PodUid,
        ctx: &mut Context<Self>,
        done: oneshot::Sender<Result<(), PlegError>>,
    ) {
        let started = Instant::now();
        let runtime = self.runtime.clone();
        let u = uid.clone();
        let work = async move { runtime.pod_status(u.as_str()).await }
            .into_actor(self)
            .map(move |result, act, _| {
                let out = match result {
                    Ok(status) => {
                        act.records.set_one(&uid, record_from_status(&status));
                        let events = act.records.events(&uid);
                        if act.store(&uid, Ok(status), started) {
                            act.emit(&events);
                            act.records.update(&uid);
                            act.reinspect.remove(&uid);
                        }
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

    fn schedule_relists(&mut self, ctx: &mut Context<Self>, period: Duration) {
        if let Some(h) = self.interval.take() {
            ctx.cancel_future(h);
        }
        self.interval = Some(ctx.run_interval(period, |act, ctx| act.relist(ctx, None)));
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
        self.relist(ctx, None);
        match self.mode {
            PlegMode::Relist => {
                let period = self.config.relist_period;
                self.schedule_relists(ctx, period);
            }
            PlegMode::Evented => {
                let safety = self.config.safety_relist_period;
                self.health
                    .set_threshold(self.config.health_threshold.max(safety * 2));
                self.schedule_relists(ctx, safety);
                self.open_stream(ctx);
            }
        }
    }

    fn summary(&self) -> PlegSummary {
        PlegSummary {
            mode: self.mode,
            healthy: self.health.check().is_ok(),
            last_relist_unix_ms: self.last_relist.map(|(t, _)| t),
            last_relist_ms: self.last_relist.map(|(_, d)| (d * 1000.0).round() / 1000.0),
            pods_tracked: self.records.len(),
            awaiting_reinspection: self.reinspect.len(),
        }
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
        self.reinspect_pod(msg.uid, ctx, tx);
        Box::pin(async move { rx.await.unwrap_or(Err(PlegError::Stopped)) })
    }
}
