//! Evented mode: the runtime's container event stream, its failures (counted once per
//! stream, see `stream.rs`), the relists that cover what a stream cannot (before it
//! opened, while it was down, what it lost: `loss.rs`), the fallback to relisting and the
//! probes that bring the stream back.

use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;
use podvisor_core::PodUid;
use podvisor_cri::{ContainerEvent, CriError};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::loss::{GRACE, Times};
use super::pending::Waiting;
use super::stream::StreamVerdict;
use super::{Pleg, PlegMode, translate};
use crate::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};

/// How long after opening a stream before the runtime surely has the subscription (a
/// gRPC server answers a stream's opening only with its first item). A relist at that
/// point covers the moments in between, and a stream that has not failed by then works.
pub(super) const SETTLE: Duration = Duration::from_secs(1);

/// An item of the event stream, tagged with the attempt it came from; `End` marks the
/// stream's end as an item, so it is told apart from an older stream's.
pub(super) enum StreamItem {
    Event(u64, Result<ContainerEvent, CriError>),
    End(u64),
}

impl Pleg {
    /// Evented mode proper: the safety relist (the normal period while the stream is
    /// lossy), the health threshold that goes with it, and the stream.
    pub(super) fn use_stream(&mut self, ctx: &mut Context<Self>) {
        self.mode = PlegMode::Evented;
        let safety = self.config.safety_relist_period;
        self.health
            .set_threshold(self.config.health_threshold.max(safety * 2));
        if let Some(h) = self.probe_handle.take() {
            ctx.cancel_future(h);
        }
        self.fit_period(ctx);
        if self.stream_opened.is_none() {
            self.open_stream(ctx);
        }
    }

    /// The relist period evented mode needs now.
    fn fit_period(&mut self, ctx: &mut Context<Self>) {
        let lossy = self.loss.is_lossy(Instant::now());
        let period = if lossy {
            self.config.relist_period
        } else {
            self.config.safety_relist_period
        };
        if self.period_now != Some(period) && self.period_now.is_some() {
            info!(?period, lossy, "evented PLEG relists at a new period");
        }
        self.schedule_relists(ctx, period);
    }

    pub(super) fn open_stream(&mut self, ctx: &mut Context<Self>) {
        let generation = self.stream.opening();
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { runtime.container_events().await }
                .into_actor(self)
                .map(move |opened, act, ctx| match opened {
                    Ok(stream) if act.stream.is_current(generation) => {
                        act.stream_open(ctx, generation, stream);
                    }
                    Ok(_) => {}
                    Err(e) => act.stream_failed(ctx, generation, Some(&e)),
                }),
        );
    }

    fn stream_open(
        &mut self,
        ctx: &mut Context<Self>,
        generation: u64,
        stream: podvisor_cri::EventStream,
    ) {
        debug!(generation, "subscribed to the runtime's container events");
        self.stream_opened = Some(Instant::now());
        self.stream_live_ns =
            Some(podvisor_core::time::now_unix_ms() as i64 * 1_000_000 + SETTLE.as_nanos() as i64);
        self.loss.forget_suspects();
        let tagged = stream
            .map(move |item| StreamItem::Event(generation, item))
            .chain(futures_util::stream::once(async move {
                StreamItem::End(generation)
            }));
        self.stream_handle = Some(ctx.add_stream(tagged));
        // What happened before the subscription took effect is in no stream.
        self.relist(ctx, None);
        ctx.run_later(SETTLE, move |act, ctx| {
            if !act.stream.is_current(generation) || act.stream_opened.is_none() {
                return;
            }
            act.relist(ctx, None);
            if act.mode == PlegMode::Relist {
                info!("the runtime streams container events: evented PLEG resumes");
                act.use_stream(ctx);
            }
        });
    }

    /// One failure of stream `generation`, however it showed (see `stream.rs`).
    fn stream_failed(
        &mut self,
        ctx: &mut Context<Self>,
        generation: u64,
        error: Option<&CriError>,
    ) {
        if !self.stream.is_current(generation) {
            return;
        }
        self.stream_opened = None;
        self.stream_live_ns = None;
        if let Some(h) = self.stream_handle.take() {
            ctx.cancel_future(h);
        }
        if self.mode == PlegMode::Relist {
            // A probe: relisting goes on, the next probe tries again.
            debug!(error = ?error.map(ToString::to_string), "the event stream is still unavailable");
            self.stream.abandon(generation);
            return;
        }
        let verdict = self.stream.failed(generation, error);
        // Events may have been missed: look at everything.
        self.relist(ctx, None);
        match verdict {
            StreamVerdict::Retry { attempt, after } => {
                let reason =
                    error.map_or_else(|| "the event stream ended".into(), |e| e.to_string());
                debug!(%reason, attempt, "container event stream failed; reconnecting");
                ctx.run_later(after, |act, ctx| {
                    if act.mode == PlegMode::Evented && act.stream_opened.is_none() {
                        act.open_stream(ctx);
                    }
                });
            }
            StreamVerdict::FallBack(reason) => self.fall_back(ctx, &reason),
            StreamVerdict::Stale => {}
        }
    }

    /// Leaves evented mode, logged once, and probes the stream now and then.
    fn fall_back(&mut self, ctx: &mut Context<Self>, reason: &str) {
        if self.mode == PlegMode::Relist {
            return;
        }
        info!(%reason, period = ?self.config.relist_period, "PLEG falls back to relisting");
        self.mode = PlegMode::Relist;
        self.health.set_threshold(self.config.health_threshold);
        let period = self.config.relist_period;
        self.schedule_relists(ctx, period);
        let probe = self.config.stream_probe_period;
        self.probe_handle = Some(ctx.run_interval(probe, |act, ctx| act.probe(ctx)));
    }

    /// Tries the stream again while relisting (a runtime restarted, or upgraded to one
    /// that streams). Nothing changes until it has worked for `SETTLE`.
    pub(super) fn probe(&mut self, ctx: &mut Context<Self>) {
        if self.config.mode == PlegMode::Evented
            && self.mode == PlegMode::Relist
            && self.stream_opened.is_none()
        {
            self.open_stream(ctx);
        }
    }

    /// Whose pod an event is about, or `None` when it is not this node's.
    fn event_pod(&mut self, event: &ContainerEvent) -> Option<PodUid> {
        let named = event
            .pod
            .as_ref()
            .map(|p| p.uid.as_str())
            .filter(|u| !u.is_empty())
            .map(PodUid::from);
        if !event.pod_labels.is_empty() {
            return named.filter(|_| self.owns(&event.pod_labels));
        }
        // The runtime did not say whose (the sandbox is gone): only a pod already known.
        let uid = named.or_else(|| self.records.pod_of_container(&event.container_id))?;
        (self.config.node.is_none() || self.records.contains(&uid)).then_some(uid)
    }

    fn on_container_event(&mut self, event: ContainerEvent, ctx: &mut Context<Self>) {
        self.events_received += 1;
        self.config.metrics.seen_active();
        debug!(container_id = %event.container_id, kind = ?event.kind, created_at = event.created_at, "container event");
        let kinds = translate(event.kind);
        self.loss
            .delivered(&event.container_id, kinds, Instant::now());
        let Some(uid) = self.event_pod(&event) else {
            self.events_ignored += 1;
            if self.config.node.is_none() && event.pod_labels.is_empty() {
                // A container of a pod never seen: a relist will find it.
                self.relist(ctx, None);
            }
            return;
        };
        if kinds.is_empty() {
            // A creation: nothing to report, but the start that follows must not be the
            // first this stream says of the container (see `loss.rs`).
            let times = Times {
                id: event.container_id.clone(),
                ..Times::default()
            };
            self.loss
                .check_sequence(event.kind, &times, 0, Instant::now());
            return;
        }
        if self.slow.contains(&uid) {
            // Its inspection aside settles it from what the runtime answers.
            self.inspect_slow(ctx);
            return;
        }
        let waiting = Waiting {
            container_id: event.container_id,
            said: event.kind,
            kinds,
        };
        if let Some((uid, waiting)) =
            self.settle_from_snapshot(uid, waiting, event.snapshot, event.created_at, ctx)
        {
            self.queue_event(uid, waiting, ctx);
        }
    }

    /// Whether the stream skipped a step of this container's life (see `loss.rs`).
    pub(super) fn check_sequence(
        &mut self,
        kind: podvisor_cri::ContainerEventKind,
        id: &str,
        status: &podvisor_cri::PodStatus,
        ctx: &mut Context<Self>,
    ) {
        let times = status.containers.iter().find(|c| c.id == id).map_or_else(
            || Times {
                id: id.to_string(),
                ..Times::default()
            },
            Times::from,
        );
        let Some(live) = self.stream_live_ns else {
            return;
        };
        if self.loss.check_sequence(kind, &times, live, Instant::now()) {
            self.report_loss(1);
            if self.mode == PlegMode::Evented {
                self.fit_period(ctx);
            }
        }
    }

    /// A relist that started at `started` found `events`: under a stream that had been
    /// open for a while, each container change it found first is suspect.
    pub(super) fn suspect(&mut self, events: &[PodLifecycleEvent], started: Instant) {
        let covered = self.mode == PlegMode::Evented
            && self
                .stream_opened
                .is_some_and(|opened| started > opened + SETTLE);
        if !covered {
            return;
        }
        for e in events {
            if matches!(
                e.kind,
                PlegEventKind::ContainerStarted
                    | PlegEventKind::ContainerDied
                    | PlegEventKind::ContainerRemoved
            ) {
                self.loss.relist_saw(&e.id, e.kind, started);
            }
        }
    }

    /// After a relist or an inspection: judges the suspects once they are overdue, and
    /// fits the period.
    pub(super) fn after_relist(&mut self, ctx: &mut Context<Self>) {
        if self.mode != PlegMode::Evented {
            return;
        }
        if self.loss.has_suspects() && !self.judging {
            self.judging = true;
            ctx.run_later(GRACE, |act, ctx| {
                act.judging = false;
                act.judge_stream(ctx);
            });
        }
        self.fit_period(ctx);
    }

    fn report_loss(&self, lost: usize) {
        warn!(
            lost,
            total = self.loss.lost_total(),
            "the runtime's event stream lost container events (another GetContainerEvents \
             subscriber takes part of them on containerd 1.7, containerd#7318, or its \
             buffer overflowed); relisting at the normal period beside it"
        );
    }

    fn judge_stream(&mut self, ctx: &mut Context<Self>) {
        let lost = self.loss.judge(Instant::now());
        if lost > 0 {
            self.report_loss(lost);
        }
        if self.mode == PlegMode::Evented {
            self.fit_period(ctx);
        }
        if self.loss.has_suspects() {
            self.after_relist(ctx);
        }
    }
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
        // A stream item is no message: publish the summary it changed (counters, mode).
        podvisor_actors::publish_now(ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The default would stop the actor. The end was already handled as `End`.
    }
}
