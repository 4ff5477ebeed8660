//! Container events waiting for their pod's inspection. An event whose own snapshot is
//! not the pod's whole status (`snapshot.rs`) is followed by an inspection of its pod,
//! but not one at a time in the PLEG's `ctx.wait`: that let one pod whose inspection
//! hangs hold up every other pod's events for the inspection's bound, and a burst of
//! events cost one inspection each. Instead a pod has at most one inspection in flight; events that come
//! meanwhile wait for the next one (the same event twice is told once); a few pods are
//! inspected at once, first come first served.
//!
//! An inspection finished here may land after a relist that began later. That is
//! harmless: the cache keeps the newer status (it stores by inspection time), and records
//! set from the older one make the next relist inspect the pod again.

use std::collections::{HashMap, HashSet, VecDeque};

use actix::prelude::*;
use podvisor_core::PodUid;
use podvisor_cri::{ContainerEventKind, CriError, PodStatus};
use tokio::time::Instant;
use tracing::warn;

use super::{Pleg, record_from_status};
use crate::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};

/// One event's part in its pod's next inspection: which container, what the runtime
/// said, and what the PLEG reports for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Waiting {
    pub(super) container_id: String,
    pub(super) said: ContainerEventKind,
    pub(super) kinds: &'static [PlegEventKind],
}

#[derive(Debug, Default)]
pub(super) struct EventQueue {
    waiting: HashMap<PodUid, Vec<Waiting>>,
    /// Pods with waiting events and no inspection in flight, in arrival order.
    ready: VecDeque<PodUid>,
    in_flight: HashSet<PodUid>,
}

impl EventQueue {
    pub(super) fn push(&mut self, uid: PodUid, event: Waiting) {
        let list = self.waiting.entry(uid.clone()).or_default();
        if list.contains(&event) {
            return;
        }
        list.push(event);
        if list.len() == 1 && !self.in_flight.contains(&uid) {
            self.ready.push_back(uid);
        }
    }

    /// The next pod to inspect and its events, while fewer than `limit` are in flight.
    pub(super) fn next(&mut self, limit: usize) -> Option<(PodUid, Vec<Waiting>)> {
        if self.in_flight.len() >= limit {
            return None;
        }
        let uid = self.ready.pop_front()?;
        let events = self.waiting.remove(&uid).unwrap_or_default();
        self.in_flight.insert(uid.clone());
        Some((uid, events))
    }

    /// Pod `uid`'s inspection is over; events that came meanwhile make it ready again.
    pub(super) fn done(&mut self, uid: &PodUid) {
        self.in_flight.remove(uid);
        if self.waiting.get(uid).is_some_and(|w| !w.is_empty()) {
            self.ready.push_back(uid.clone());
        }
    }

    /// Drops what waits for pod `uid` (a slow pod: its inspection aside settles it).
    pub(super) fn forget(&mut self, uid: &PodUid) {
        self.waiting.remove(uid);
        self.ready.retain(|u| u != uid);
    }

    /// Events waiting, and pods being inspected for theirs.
    pub(super) fn depth(&self) -> (usize, usize) {
        let waiting = self.waiting.values().map(Vec::len).sum();
        (waiting, self.in_flight.len())
    }
}

impl Pleg {
    /// Queues an event for its pod's next inspection and starts what may start.
    pub(super) fn queue_event(&mut self, uid: PodUid, event: Waiting, ctx: &mut Context<Self>) {
        self.pending.push(uid, event);
        self.inspect_pending(ctx);
    }

    fn inspect_pending(&mut self, ctx: &mut Context<Self>) {
        let limit = self.config.inspect_concurrency.max(1);
        while let Some((uid, events)) = self.pending.next(limit) {
            let started = Instant::now();
            let bound = self.config.inspect_timeout;
            let work = super::slow::inspect_bounded(self.runtime.clone(), uid.clone(), None, bound)
                .into_actor(self)
                .map(move |result, act, ctx| {
                    act.pending.done(&uid);
                    act.event_inspected(uid, &events, result, started, ctx);
                    act.inspect_pending(ctx);
                    podvisor_actors::publish_now(ctx);
                });
            ctx.spawn(work);
        }
    }

    /// The inspection after pod `uid`'s events: settles them, or marks the pod for another.
    fn event_inspected(
        &mut self,
        uid: PodUid,
        events: &[Waiting],
        result: Result<PodStatus, CriError>,
        started: Instant,
        ctx: &mut Context<Self>,
    ) {
        let status = match result {
            Ok(status) => status,
            Err(error) => {
                let result = Err(error);
                if super::slow::gave_up(&result) {
                    self.store(&uid, result, started);
                    self.pending.forget(&uid);
                    self.mark_slow(&uid, ctx);
                } else if let Err(error) = result {
                    warn!(pod_uid = %uid, %error, "inspecting pod after a runtime event failed");
                    self.reinspect.insert(uid);
                }
                return;
            }
        };
        self.settle_events(uid, events, status, started, ctx);
    }

    /// A pod's status after its events (inspected, or the runtime's snapshot): the stream
    /// checked against it, the records set from it, the status stored as of `at`, the
    /// events' own kinds reported (not a diff: the stream said what happened).
    pub(super) fn settle_events(
        &mut self,
        uid: PodUid,
        events: &[Waiting],
        status: PodStatus,
        at: Instant,
        ctx: &mut Context<Self>,
    ) {
        for e in events {
            self.check_sequence(e.said, &e.container_id, &status, ctx);
        }
        let mut lifecycle = Vec::with_capacity(events.len());
        for e in events {
            let name = self.container_name(&uid, &e.container_id, &status);
            lifecycle.extend(e.kinds.iter().map(|k| PodLifecycleEvent {
                uid: uid.clone(),
                kind: *k,
                id: e.container_id.clone(),
                container: name.clone(),
            }));
        }
        self.records.set_one(&uid, record_from_status(&status));
        self.records.update(&uid);
        if self.store(&uid, Ok(status), at) {
            self.emit(&lifecycle);
            self.start_seen(&uid);
        }
    }

    /// A container's name, from the status or, for one already gone, from the records.
    fn container_name(&self, uid: &PodUid, id: &str, status: &PodStatus) -> String {
        let listed = status.containers.iter().find(|c| c.id == id);
        listed
            .map(|c| c.name.clone())
            .or_else(|| self.records.container_name(uid, id))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, said: ContainerEventKind) -> Waiting {
        Waiting {
            container_id: id.into(),
            said,
            kinds: &[],
        }
    }

    #[test]
    fn a_pod_has_one_inspection_in_flight_and_its_later_events_wait_for_the_next() {
        use ContainerEventKind::*;
        let mut q = EventQueue::default();
        let (a, b) = (PodUid::from("a"), PodUid::from("b"));
        q.push(a.clone(), ev("c1", Started));
        q.push(a.clone(), ev("c1", Started)); // the same event twice is told once
        q.push(b.clone(), ev("c2", Stopped));
        let (first, events) = q.next(8).unwrap();
        assert_eq!((first.clone(), events.len()), (a.clone(), 1));
        q.push(a.clone(), ev("c1", Stopped)); // while a is inspected
        let (second, _) = q.next(8).unwrap();
        assert_eq!(second, b);
        assert!(q.next(8).is_none(), "a is still in flight");
        assert_eq!(q.depth(), (1, 2));
        q.done(&a);
        let (again, events) = q.next(8).unwrap();
        assert_eq!((again, events), (a, vec![ev("c1", Stopped)]));
    }

    #[test]
    fn no_more_than_the_limit_are_inspected_at_once_and_a_forgotten_pod_waits_no_more() {
        use ContainerEventKind::*;
        let mut q = EventQueue::default();
        for p in ["a", "b", "c"] {
            q.push(PodUid::from(p), ev(p, Created));
        }
        assert!(q.next(1).is_some());
        assert!(q.next(1).is_none());
        q.forget(&PodUid::from("b"));
        q.done(&PodUid::from("a"));
        assert_eq!(q.next(1).unwrap().0, PodUid::from("c"));
        assert_eq!(q.depth(), (0, 1));
    }
}
