//! The event recorder actor: what components have to say about objects, written to the
//! store as `v1` Events, deduplicated and rate-limited by the [`Correlator`].
//!
//! Writes go one at a time (the store serialises them anyway) from a bounded queue: when
//! the store is slow and more than [`MAX_QUEUED`] writes wait, the oldest are dropped, so a
//! storm of events costs bounded memory. A repeat updates its Event (count, last time);
//! one whose Event has expired from the store (the store deletes Events after their TTL)
//! is created again.
//!
//! Restart: nothing to rebuild. A restarted recorder has forgotten which events it wrote,
//! so a repeat after a crash starts a new Event; nothing is lost but a count.

mod correlator;

use std::collections::VecDeque;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::{EventType, Kind, ObjectKey};
use podvisor_store::actor::{Create, Update};
use podvisor_store::{Resource, StoreError, WriteOptions};
use serde::Serialize;
use serde_json::{Value, json};
use tracing::debug;

pub use correlator::{Correlator, Occurrence};

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
pub const MAX_QUEUED: usize = 1024;

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
    create: Recipient<Create>,
    update: Recipient<Update>,
    correlator: Correlator,
    queue: VecDeque<(Value, bool)>,
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

fn rfc3339(ms: u64) -> Value {
    let nanos = i64::try_from(ms)
        .unwrap_or(i64::MAX)
        .saturating_mul(1_000_000);
    podvisor_core::time::from_nanos(nanos)
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or(Value::Null)
}

/// The Event object for one occurrence.
pub fn event_body(reporter: &Reporter, e: &RecordEvent, o: &Occurrence) -> Value {
    let object = &e.object;
    let namespace = object.namespace.clone().unwrap_or_else(|| "default".into());
    let api_version = Resource::of(object.kind).api_version();
    let mut involved =
        json!({"kind": object.kind.as_str(), "name": object.name, "apiVersion": api_version});
    if let Some(ns) = &object.namespace {
        involved["namespace"] = ns.clone().into();
    }
    if let Some(uid) = &object.uid {
        involved["uid"] = uid.as_str().into();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": o.name, "namespace": namespace},
        "involvedObject": involved,
        "type": e.type_.as_str(),
        "reason": e.reason,
        "message": e.message,
        "source": {"component": reporter.component, "host": reporter.host},
        "reportingComponent": reporter.component,
        "reportingInstance": reporter.host,
        "firstTimestamp": rfc3339(o.first_ms),
        "lastTimestamp": rfc3339(o.last_ms),
        "count": o.count,
    })
}

/// The write for one event: create it, or (a repeat) replace it; each falls back to the
/// other when the store disagrees (expired, or already there).
async fn write(
    create: Recipient<Create>,
    update: Recipient<Update>,
    body: Value,
    new: bool,
) -> Result<(), StoreError> {
    let res = Resource::of(Kind::Event);
    let ns = body["metadata"]["namespace"].as_str().map(str::to_string);
    let make = |body: Value| Create {
        resource: res,
        namespace: ns.clone(),
        body,
        opts: WriteOptions::default(),
    };
    let replace = |body: Value| Update {
        resource: res,
        body,
        status_only: false,
        opts: WriteOptions::default(),
    };
    let closed = |e: podvisor_actors::MailboxError| StoreError::Db(e.to_string());
    let first = if new {
        create.send(make(body.clone())).await.map_err(closed)?
    } else {
        update.send(replace(body.clone())).await.map_err(closed)?
    };
    match first {
        Err(StoreError::AlreadyExists { .. }) => {
            update.send(replace(body)).await.map_err(closed)?
        }
        Err(StoreError::NotFound { .. }) => create.send(make(body)).await.map_err(closed)?,
        other => other,
    }
    .map(|_| ())
}

impl EventRecorder {
    pub fn new(reporter: Reporter, create: Recipient<Create>, update: Recipient<Update>) -> Self {
        Self {
            reporter,
            create,
            update,
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
        let work = write(self.create.clone(), self.update.clone(), body, new);
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
