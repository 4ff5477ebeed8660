//! The API pod source actor: the pods bound to this node, from a reflector on the store
//! (list, then watch from the list's revision; resumed when the watch ends, listed again
//! on 410), sent to the sync loop as full sets: after the list, and after each batch of
//! changes (coalesced: one snapshot per turn of the actor, however many changes arrived).
//!
//! Restart: nothing is kept; the store is the truth. It lists and watches again, and a
//! restarted sync loop asks it (`Rescan`) for the set.

use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::Kind;
use podvisor_kubelet::protocol::sources::{Rescan, SourcePods};
use podvisor_machinery::reflector::{Reflected, Reflector, Source, Update};
use podvisor_store::{ChangeType, FieldSelector, Selector};
use serde::Serialize;
use tracing::info;

use crate::SOURCE;
use crate::podset::PodSet;

pub struct ApiPodSource {
    pods_view: Reflector,
    sink: Recipient<SourcePods>,
    pods: PodSet,
    /// A snapshot is due at the end of this turn.
    dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiPodSourceSummary {
    pub pods: usize,
    pub revision: u64,
}

impl ApiPodSource {
    pub fn new(node: String, source: Source, sink: Recipient<SourcePods>) -> Self {
        let mut selector = Selector::all(Kind::Pod);
        selector.fields = FieldSelector::equals("spec.nodeName", &node);
        Self {
            pods_view: Reflector::new("pods", selector, source),
            sink,
            pods: PodSet::default(),
            dirty: false,
        }
    }

    fn send_snapshot(&mut self) {
        self.dirty = false;
        self.sink.do_send(SourcePods {
            source: SOURCE,
            pods: self.pods.snapshot(),
        });
    }

    fn mark(&mut self, ctx: &mut Context<Self>) {
        if !self.dirty {
            self.dirty = true;
            ctx.run_later(Duration::ZERO, |act, _| act.send_snapshot());
        }
    }

    fn apply(&mut self, update: Update, ctx: &mut Context<Self>) {
        let revision = self.pods_view.revision;
        match update {
            Update::Reset(items) => {
                self.pods.reset(&items, revision);
                info!(pods = self.pods.len(), revision, "pods from the store");
                self.send_snapshot();
            }
            Update::Change(c) => {
                if c.kind == ChangeType::Deleted && self.pods.tombstone(&c.object) {
                    self.send_snapshot();
                }
                if self.pods.apply(c.kind, &c.object, c.revision) {
                    self.mark(ctx);
                }
            }
        }
    }
}

impl Actor for ApiPodSource {
    type Context = Context<Self>;
}

impl SupervisedActor for ApiPodSource {
    const KIND: &'static str = "api-pod-source";
    type Summary = ApiPodSourceSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.pods_view.start(ctx, start.me.recipient());
    }

    fn summary(&self) -> ApiPodSourceSummary {
        ApiPodSourceSummary {
            pods: self.pods.len(),
            revision: self.pods_view.revision,
        }
    }
}

impl Handler<Reflected> for ApiPodSource {
    type Result = ();
    fn handle(&mut self, msg: Reflected, ctx: &mut Context<Self>) {
        if let Some(update) = self.pods_view.accept(msg, ctx) {
            self.apply(update, ctx);
        }
    }
}

impl Handler<Rescan> for ApiPodSource {
    type Result = ();
    fn handle(&mut self, _: Rescan, _: &mut Context<Self>) {
        self.send_snapshot();
    }
}
