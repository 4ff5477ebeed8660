//! A worker's request for an inspection after a sync whose last change was a start
//! (`Reinspect::started`). The runtime sends the start's event, with the pod's statuses,
//! before the start returns, so it mostly reaches the PLEG first; settled from its
//! snapshot, it put into the cache a status that shows everything the sync did, and its
//! events are out: nothing is left to inspect. The request may still come first (the
//! PLEG's mailbox is served before its stream), so while the stream is open it waits a
//! little for the event before it inspects.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use podvisor_core::PodUid;
use tokio::sync::oneshot;

use super::{Pleg, PlegMode};
use crate::protocol::cache::ContainerId;
use crate::protocol::lifecycle::PlegError;

/// How long a request waits for its start's event before the pod is inspected.
pub const WAIT: Duration = Duration::from_millis(50);

type Reply = oneshot::Sender<Result<(), PlegError>>;

/// Requests waiting for their start's event, by pod (a newer request replaces an older:
/// the older's asker gets `Stopped`).
#[derive(Default)]
pub(super) struct Awaiting(HashMap<PodUid, (ContainerId, Reply)>);

impl Awaiting {
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Pleg {
    /// Answers a request after container `id`'s start: at once if the records show it,
    /// after its event (or `WAIT`) if the stream may bring it, else by inspecting.
    pub(super) fn reinspect_after_start(
        &mut self,
        uid: PodUid,
        id: ContainerId,
        ctx: &mut Context<Self>,
        done: Reply,
    ) {
        if self.shows_started(&uid, &id) {
            self.reinspections_spared += 1;
            let _ = done.send(Ok(()));
            return;
        }
        let streaming = self.mode == PlegMode::Evented && self.stream_opened.is_some();
        if !streaming || !self.config.event_snapshots {
            self.reinspect_pod(uid, ctx, done);
            return;
        }
        self.awaiting.0.insert(uid.clone(), (id, done));
        ctx.run_later(WAIT, move |act, ctx| {
            let Some((id, done)) = act.awaiting.0.remove(&uid) else {
                return; // answered by the event
            };
            if act.shows_started(&uid, &id) {
                act.reinspections_spared += 1;
                let _ = done.send(Ok(()));
            } else {
                act.reinspect_pod(uid, ctx, done);
            }
        });
    }

    /// Pod `uid`'s status was just stored: answers its waiting request if it shows the
    /// start.
    pub(super) fn start_seen(&mut self, uid: &PodUid) {
        let shown = |act: &Self| {
            let waiting = act.awaiting.0.get(uid);
            waiting.is_some_and(|(id, _)| act.shows_started(uid, id))
        };
        if !shown(self) {
            return;
        }
        if let Some((_, done)) = self.awaiting.0.remove(uid) {
            self.reinspections_spared += 1;
            let _ = done.send(Ok(()));
        }
    }
}
