//! The event recorder actor: what components have to say about objects, written through
//! the client as `v1` Events, deduplicated and rate-limited by the [`Correlator`].
//!
//! Writes go one at a time from a bounded queue: when the API is slow and more than
//! [`MAX_QUEUED`] writes wait, the oldest are dropped, so a storm of events costs bounded
//! memory. A repeat updates its Event (count, last time); one whose Event has expired (the
//! API deletes Events after their TTL) is created again.
//!
//! Restart: nothing to rebuild. A restarted recorder has forgotten which events it wrote,
//! so a repeat after a crash starts a new Event; nothing is lost but a count.

mod correlator;

use std::collections::VecDeque;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_client::{Api, Error, PostParams};
use podvisor_core::{EventType, Kind, ObjectKey};
use serde::Serialize;
use tracing::debug;

use correlator::{Correlator, Occurrence};

/// Something worth telling about `object` (its UID included when known).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct RecordEvent {
    pub object: ObjectKey,
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

/// Writes waiting beyond this many drop the oldest.
pub(crate) const MAX_QUEUED: usize = 1024;

/// Who reports the events (an Event's `source` and `reporting*` fields).
#[derive(Debug, Clone)]
pub struct Reporter {
    /// `kubelet`, `taint-eviction-controller`, `replicaset-controller`.
    pub component: String,
    /// The node's name.
    pub host: String,
}

pub struct EventRecorder {
    reporter: Reporter,
    api: Api<Event>,
    correlator: Correlator,
    queue: VecDeque<(Event, bool)>,
    busy: bool,
    written: u64,
    failed: u64,
    shed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRecorderSummary {
    pub component: String,
    pub queued: usize,
    pub written: u64,
    pub failed: u64,
    /// Dropped by the per-object allowance or a full queue.
    pub dropped: u64,
}

fn time(ms: u64) -> Option<Time> {
    let nanos = i64::try_from(ms)
        .unwrap_or(i64::MAX)
        .saturating_mul(1_000_000);
    podvisor_core::time::from_nanos(nanos)
}

/// The API version objects of `kind` are served at.
fn api_version(kind: Kind) -> &'static str {
    match kind {
        Kind::ReplicaSet => "apps/v1",
        _ => "v1",
    }
}

/// The Event object for one occurrence.
pub(crate) fn event_body(reporter: &Reporter, e: &RecordEvent, o: &Occurrence) -> Event {
    let object = &e.object;
    let mut ev = Event {
        involved_object: ObjectReference {
            kind: Some(object.kind.as_str().to_string()),
            name: Some(object.name.clone()),
            api_version: Some(api_version(object.kind).to_string()),
            namespace: object.namespace.clone(),
            uid: object.uid.as_ref().map(|u| u.as_str().to_string()),
            ..ObjectReference::default()
        },
        type_: Some(e.type_.as_str().to_string()),
        reason: Some(e.reason.clone()),
        message: Some(e.message.clone()),
        source: Some(EventSource {
            component: Some(reporter.component.clone()),
            host: Some(reporter.host.clone()),
        }),
        reporting_component: Some(reporter.component.clone()),
        reporting_instance: Some(reporter.host.clone()),
        first_timestamp: time(o.first_ms),
        last_timestamp: time(o.last_ms),
        count: i32::try_from(o.count).ok(),
        ..Event::default()
    };
    ev.metadata.name = Some(o.name.clone());
    ev.metadata.namespace = Some(object.namespace.clone().unwrap_or_else(|| "default".into()));
    ev
}

/// The write for one event: create it, or (a repeat) replace it; each falls back to the
/// other when the API disagrees (expired, or already there).
async fn write(api: Api<Event>, ev: Event, new: bool) -> Result<(), Error> {
    let api = api.within(ev.metadata.namespace.as_deref().unwrap_or("default"));
    let pp = PostParams::default();
    let first = if new {
        api.create(&pp, ev.clone()).await
    } else {
        api.replace(&pp, ev.clone()).await
    };
    match first {
        Err(Error::AlreadyExists { .. }) => api.replace(&pp, ev).await,
        Err(Error::NotFound { .. }) => api.create(&pp, ev).await,
        other => other,
    }
    .map(|_| ())
}

impl EventRecorder {
    pub fn new(reporter: Reporter, api: Api<Event>) -> Self {
        Self {
            reporter,
            api,
            correlator: Correlator::default(),
            queue: VecDeque::new(),
            busy: false,
            written: 0,
            failed: 0,
            shed: 0,
        }
    }

    fn next(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        let Some((body, new)) = self.queue.pop_front() else {
            return;
        };
        self.busy = true;
        let work = write(self.api.clone(), body, new);
        ctx.spawn(work.into_actor(self).map(|r, act, ctx| {
            act.busy = false;
            match r {
                Ok(()) => act.written += 1,
                Err(e) => {
                    act.failed += 1;
                    debug!(error = %e, "event not written");
                }
            }
            act.next(ctx);
        }));
    }
}

impl Actor for EventRecorder {
    type Context = Context<Self>;
}

impl SupervisedActor for EventRecorder {
    const KIND: &'static str = "event-recorder";
    type Summary = EventRecorderSummary;

    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}

    fn summary(&self) -> EventRecorderSummary {
        EventRecorderSummary {
            component: self.reporter.component.clone(),
            queued: self.queue.len(),
            written: self.written,
            failed: self.failed,
            dropped: self.correlator.dropped + self.shed,
        }
    }
}

impl Handler<RecordEvent> for EventRecorder {
    type Result = ();
    fn handle(&mut self, e: RecordEvent, ctx: &mut Context<Self>) {
        let now = podvisor_core::time::now_unix_ms();
        let Some(o) = self
            .correlator
            .observe(&e.object, e.type_, &e.reason, &e.message, now)
        else {
            return;
        };
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.shed += 1;
        }
        self.queue
            .push_back((event_body(&self.reporter, &e, &o), o.is_new()));
        self.next(ctx);
    }
}
