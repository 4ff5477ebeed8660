//! Evented mode: the runtime's container event stream, its failures (counted once per
//! stream, see `stream.rs`) and the fallback to relisting.

use actix::prelude::*;
use futures_util::StreamExt;
use podvisor_cri::{ContainerEvent, CriError};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::stream::StreamVerdict;
use super::{Pleg, PlegMode, record_from_status, translate};
use crate::protocol::lifecycle::PodLifecycleEvent;

/// An item of the event stream, tagged with the attempt it came from; `End` marks the
/// stream's end as an item, so it is told apart from an older stream's.
pub(super) enum StreamItem {
    Event(u64, Result<ContainerEvent, CriError>),
    End(u64),
}

impl Pleg {
    pub(super) fn open_stream(&mut self, ctx: &mut Context<Self>) {
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
            .map(|p| p.uid.as_str())
            .filter(|u| !u.is_empty())
            .map(podvisor_core::PodUid::from)
            .or_else(|| self.records.pod_of_container(&event.container_id));
        let Some(uid) = uid else {
            // A container of a pod never seen: a relist will find it.
            return self.relist(ctx, None);
        };
        let kinds = translate(event.kind);
        if kinds.is_empty() {
            return;
        }
        let started = Instant::now();
        let runtime = self.runtime.clone();
        let u = uid.clone();
        let work = async move { runtime.pod_status(u.as_str()).await }
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
