//! The API pod source actor: the pods bound to this node, from a reflector on the client
//! (list, then watch from the list's version; resumed when the watch ends, listed again
//! on 410), sent to the sync loop as full sets: after the list, and after each batch of
//! changes (coalesced: one snapshot per turn of the actor, however many changes arrived).
//! A change to a pod's status only (the agent's own writes) sends nothing.
//!
//! Restart: nothing is kept; the API is the truth. It lists and watches again, and a
//! restarted sync loop asks it (`Rescan`) for the set.

use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, ListParams, WatchEvent};
use podvisor_kubelet::protocol::sources::{Rescan, SourcePods};
use podvisor_machinery::reflector::{Reflected, Reflector, Update};
use serde::Serialize;
use tracing::info;

use crate::SOURCE;
use crate::podset::PodSet;

pub struct ApiPodSource {
    pods_view: Reflector<Pod>,
    sink: Recipient<SourcePods>,
    pods: PodSet,
    /// A snapshot is due at the end of this turn.
    dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiPodSourceSummary {
    pub pods: usize,
    pub version: String,
}

/// The pods bound to `node`, as every actor that follows them lists them.
pub fn bound_to(node: &str) -> ListParams {
    ListParams::default().field_equals("spec.nodeName", node)
}

impl ApiPodSource {
    pub fn new(node: &str, client: Client, sink: Recipient<SourcePods>) -> Self {
        Self {
            pods_view: Reflector::new(Api::all(client), bound_to(node)),
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

    fn apply(&mut self, update: Update<Pod>, ctx: &mut Context<Self>) {
        match update {
            Update::Reset(items) => {
                self.pods.reset(&items);
                let version = &self.pods_view.version;
                info!(pods = self.pods.len(), %version, "pods from the API");
                self.send_snapshot();
            }
            Update::Change(e) => {
                if let WatchEvent::Deleted(gone) = &e
                    && self.pods.tombstone(gone)
                {
                    self.send_snapshot();
                }
                if self.pods.apply(&e) {
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
            version: self.pods_view.version.clone(),
        }
    }
}

impl Handler<Reflected<Pod>> for ApiPodSource {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
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
