//! The PLEG (pod lifecycle event generator) actor: turns the runtime's state into pod
//! lifecycle events for the sync loop and keeps the status cache current.
//!
//! Relisting: every `relist_period`, list every sandbox and container, diff each pod
//! against the previous relist (`records.rs`), inspect the pods that changed, store their
//! status in the cache, emit their events, then tell the cache that every pod is at least
//! as fresh as the relist's start. A failed inspection emits nothing and is retried next
//! time. `Reinspect` does the same for one pod at once: the pod worker asks for it after a
//! sync, so it need not wait a relist period for fresh status.
//!
//! Evented mode consumes the runtime's container event stream and keeps a slow safety
//! relist; a runtime that cannot stream (containerd 1.6 answers `Unimplemented`) puts it
//! back into relisting at once.
//!
//! Relists and inspections run in `ctx.wait`, one at a time: messages that arrive meanwhile
//! wait their turn, so records never see two diffs interleave.

mod health;
mod records;
mod stream;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use futures_util::StreamExt;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_cri::{ContainerEvent, CriError, PodStatus, Runtime};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, info, warn};

pub use health::PlegHealth;
pub use records::{PodRecord, PodRecords, compute_events, record_from_status, translate};
use stream::{StreamTracker, StreamVerdict};

use crate::status_cache::{SetStatus, UpdateTime};

// ---- messages ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PlegEventKind {
    ContainerStarted,
    ContainerDied,
    ContainerRemoved,
    /// A container's state is neither running nor exited (created, unknown).
    ContainerChanged,
    /// The pod's sandboxes changed and none of its containers did.
    PodSync,
}

/// What the PLEG tells its subscribers (the sync loop): look at pod `uid` now.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
#[rtype(result = "()")]
pub struct PodLifecycleEvent {
    pub uid: String,
    pub kind: PlegEventKind,
    /// The container's id (the sandbox's, for `PodSync`).
    pub id: String,
    /// The container's name (empty for `PodSync`).
    pub container: String,
}

/// Relist now; answers when the relist is done.
#[derive(Message)]
#[rtype(result = "Result<RelistReport, PlegError>")]
pub struct RelistNow;

/// Inspect one pod now: store its status in the cache and emit its events.
#[derive(Message)]
#[rtype(result = "Result<(), PlegError>")]
pub struct Reinspect {
    pub uid: String,
}

// ---- configuration and errors ---------------------------------------------------------------

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

#[derive(Debug, Clone, thiserror::Error)]
pub enum PlegError {
    #[error("relist failed: {0}")]
    List(CriError),
    #[error("inspecting pod {uid} failed: {error}")]
    Inspect { uid: String, error: CriError },
    #[error("the PLEG stopped before finishing")]
    Stopped,
}

/// What one relist did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelistReport {
    pub pods: usize,
    pub inspected: usize,
    pub failed: usize,
    pub events: usize,
}

/// The status cache, as the PLEG sees it.
#[derive(Clone)]
pub struct CacheHandle {
    pub set: Recipient<SetStatus>,
    pub update_time: Recipient<UpdateTime>,
}

// ---- actor ---------------------------------------------------------------------------------

type Inspected = Vec<(String, Vec<PodLifecycleEvent>, Result<PodStatus, CriError>)>;

pub struct Pleg {
    runtime: Arc<dyn Runtime>,
    cache: CacheHandle,
    subscribers: Vec<Recipient<PodLifecycleEvent>>,
    config: PlegConfig,
    health: Arc<PlegHealth>,
    records: PodRecords,
    reinspect: BTreeSet<String>,
    mode: PlegMode,
    /// Set for a fresh instance: its first relist inspects every pod (the cache may be a
    /// fresh, empty one).
    full_inspection: bool,
    interval: Option<SpawnHandle>,
    stream: StreamTracker,
    stream_handle: Option<SpawnHandle>,
    list_failures: u32,
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

    fn store(&mut self, uid: &str, status: Result<PodStatus, String>, at: Instant) -> bool {
        let (status, error) = match status {
            Ok(s) => (Arc::new(s), None),
            Err(e) => (Arc::new(PodStatus::default()), Some(e)),
        };
        let msg = SetStatus {
            uid: uid.to_string(),
            status,
            error,
            at,
        };
        if self.cache.set.try_send(msg).is_err() {
            warn!(pod_uid = %uid, "status cache refused an update; will inspect again");
            self.reinspect.insert(uid.to_string());
            return false;
        }
        true
    }

    /// Diffs a fresh listing against the records; returns the pods to inspect with their
    /// events. Pods with nothing new are settled here.
    fn plan(&mut self, pods: Vec<podvisor_cri::Pod>) -> Vec<(String, Vec<PodLifecycleEvent>)> {
        self.records.set_current(pods);
        let full = self.full_inspection;
        let reinspect = &self.reinspect;
        self.records.changes(|uid| full || reinspect.contains(uid))
    }

    /// Stores inspection results, emits events, settles records, and stamps the cache.
    fn apply(&mut self, inspected: Inspected, started: Instant, took: Duration) -> RelistReport {
        let mut report = RelistReport {
            pods: self.records.len(),
            inspected: inspected.len(),
            ..Default::default()
        };
        self.reinspect.clear();
        for (uid, events, result) in inspected {
            match result {
                Ok(status) => {
                    if self.store(&uid, Ok(status), started) {
                        report.events += events.len();
                        self.emit(&events);
                        self.records.update(&uid);
                    }
                }
                Err(error) => {
                    warn!(pod_uid = %uid, %error, "inspecting pod failed; retrying on the next relist");
                    self.store(&uid, Err(error.to_string()), started);
                    self.reinspect.insert(uid);
                    report.failed += 1;
                }
            }
        }
        let _ = self.cache.update_time.try_send(UpdateTime(started));
        self.full_inspection = false;
        self.health.relisted();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.last_relist = Some((unix_ms, took.as_secs_f64() * 1e3));
        if self.list_failures > 0 {
            info!(after_failures = self.list_failures, "relisting works again");
            self.list_failures = 0;
        }
        report
    }

    fn relist(
        &mut self,
        ctx: &mut Context<Self>,
        done: Option<oneshot::Sender<Result<RelistReport, PlegError>>>,
    ) {
        let started = Instant::now();
        let clock = std::time::Instant::now();
        let runtime = self.runtime.clone();
        let concurrency = self.config.inspect_concurrency.max(1);
        let work = async move { runtime.list_pods().await }
            .into_actor(self)
            .then(move |listed, act, _| {
                let todo = listed.map(|pods| act.plan(pods));
                let runtime = act.runtime.clone();
                async move {
                    let todo = todo.map_err(PlegError::List)?;
                    Ok(inspect_all(runtime, todo, concurrency).await)
                }
                .into_actor(act)
            })
            .map(move |result: Result<Inspected, PlegError>, act, _| {
                let out = result.map(|inspected| act.apply(inspected, started, clock.elapsed()));
                if let Err(e) = &out {
                    act.list_failures += 1;
                    if act.list_failures == 1 {
                        warn!(error = %e, "relist failed; retrying every period");
                    } else {
                        debug!(error = %e, failures = act.list_failures, "relist failed again");
                    }
                }
                if let Some(done) = done {
                    let _ = done.send(out);
                }
            });
        ctx.wait(work);
    }

    fn reinspect_pod(
        &mut self,
        uid: String,
        ctx: &mut Context<Self>,
        done: oneshot::Sender<Result<(), PlegError>>,
    ) {
        let started = Instant::now();
        let runtime = self.runtime.clone();
        let u = uid.clone();
        let work = async move { runtime.pod_status(&u).await }
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

    fn open_stream(&mut self, ctx: &mut Context<Self>) {
        let generation = self.stream.opening();
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { runtime.container_events().await }
                .into_actor(self)
                .map(move |opened, act, ctx| match opened {
                    Ok(stream) if act.stream.is_current(generation) => {
                        info!("consuming the runtime's container event stream");
                        let tagged = stream
                            .map(move |item| StreamItem::Event(generation, item))
                            .chain(futures_util::stream::once(async move {
                                StreamItem::End(generation)
                            }));
                        act.stream_handle = Some(ctx.add_stream(tagged));
                    }
                    Ok(_) => {}
                    Err(e) => act.stream_failed(ctx, generation, Some(&e)),
                }),
        );
    }

    /// One failure of stream `generation`, however it showed (see `stream.rs`).
    fn stream_failed(
        &mut self,
        ctx: &mut Context<Self>,
        generation: u64,
        error: Option<&CriError>,
    ) {
        if self.mode != PlegMode::Evented {
            return;
        }
        let verdict = self.stream.failed(generation, error);
        if verdict == StreamVerdict::Stale {
            return;
        }
        if let Some(h) = self.stream_handle.take() {
            ctx.cancel_future(h);
        }
        // Events may have been missed: look at everything.
        self.relist(ctx, None);
        match verdict {
            StreamVerdict::Retry { attempt, after } => {
                let reason =
                    error.map_or_else(|| "the event stream ended".into(), |e| e.to_string());
                debug!(%reason, attempt, "container event stream failed; reconnecting");
                ctx.run_later(after, |act, ctx| act.open_stream(ctx));
            }
            StreamVerdict::FallBack(reason) => self.fall_back(ctx, &reason),
            StreamVerdict::Stale => {}
        }
    }

    /// Leaves evented mode for good (for this instance), logged once.
    fn fall_back(&mut self, ctx: &mut Context<Self>, reason: &str) {
        if self.mode == PlegMode::Relist {
            return;
        }
        info!(%reason, period = ?self.config.relist_period, "PLEG falls back to relisting");
        self.mode = PlegMode::Relist;
        self.health.set_threshold(self.config.health_threshold);
        let period = self.config.relist_period;
        self.schedule_relists(ctx, period);
    }

    fn on_container_event(&mut self, event: ContainerEvent, ctx: &mut Context<Self>) {
        let uid = event
            .pod
            .as_ref()
            .map(|p| p.uid.clone())
            .filter(|u| !u.is_empty())
            .or_else(|| self.records.pod_of_container(&event.container_id));
        let Some(uid) = uid else {
            // A container of a pod never seen: a relist will find it.
            self.relist(ctx, None);
            return;
        };
        let kinds = translate(event.kind);
        if kinds.is_empty() {
            return;
        }
        let started = Instant::now();
        let runtime = self.runtime.clone();
        let u = uid.clone();
        let work = async move { runtime.pod_status(&u).await }
            .into_actor(self)
            .map(move |result, act, _| match result {
                Ok(status) => {
                    let name = status
                        .containers
                        .iter()
                        .find(|c| c.id == event.container_id)
                        .map(|c| c.name.clone())
                        .or_else(|| act.records.container_name(&uid, &event.container_id))
                        .unwrap_or_default();
                    act.records.set_one(&uid, record_from_status(&status));
                    act.records.update(&uid);
                    if act.store(&uid, Ok(status), started) {
                        let events: Vec<PodLifecycleEvent> = kinds
                            .iter()
                            .map(|k| PodLifecycleEvent {
                                uid: uid.clone(),
                                kind: *k,
                                id: event.container_id.clone(),
                                container: name.clone(),
                            })
                            .collect();
                        act.emit(&events);
                    }
                }
                Err(error) => {
                    warn!(pod_uid = %uid, %error, "inspecting pod after a runtime event failed");
                    act.reinspect.insert(uid);
                }
            });
        ctx.wait(work);
    }
}

async fn inspect_all(
    runtime: Arc<dyn Runtime>,
    todo: Vec<(String, Vec<PodLifecycleEvent>)>,
    concurrency: usize,
) -> Inspected {
    futures_util::stream::iter(todo)
        .map(|(uid, events)| {
            let runtime = runtime.clone();
            async move {
                let status = runtime.pod_status(&uid).await;
                (uid, events, status)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await
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

/// An item of the event stream, tagged with the attempt it came from; `End` marks the
/// stream's end as an item, so it is told apart from an older stream's.
enum StreamItem {
    Event(u64, Result<ContainerEvent, CriError>),
    End(u64),
}

impl StreamHandler<StreamItem> for Pleg {
    fn handle(&mut self, item: StreamItem, ctx: &mut Context<Self>) {
        match item {
            StreamItem::Event(generation, Ok(event)) => {
                if self.stream.is_current(generation) {
                    self.stream.delivered(generation);
                    self.on_container_event(event, ctx);
                }
            }
            StreamItem::Event(generation, Err(e)) => self.stream_failed(ctx, generation, Some(&e)),
            StreamItem::End(generation) => self.stream_failed(ctx, generation, None),
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The default would stop the actor. The end was already handled as `End`.
    }
}
