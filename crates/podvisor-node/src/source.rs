//! The API pod source actor: lists the pods bound to this node, sends the sync loop the
//! full set, then follows a watch from the list's revision and sends the set again after
//! each batch of changes (coalesced: one snapshot per turn of the actor, however many
//! changes arrived). When the watch ends (the store restarted, or cut it off) it resumes
//! from the last revision; when that is too old (410), it lists again.
//!
//! Restart: nothing is kept; the store is the truth. It lists and watches again, and a
//! restarted sync loop asks it (`Rescan`) for the set.

use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::Kind;
use podvisor_kubelet::protocol::sources::{Rescan, SourcePods};
use podvisor_store::actor::{List, Watch, WatchEvent};
use podvisor_store::{ChangeType, FieldSelector, ListPage, Selector, StoreError};
use serde::Serialize;
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::SOURCE;
use crate::podset::PodSet;

/// How long to wait before trying the store again after a failure.
const RETRY: Duration = Duration::from_secs(1);

pub struct ApiPodSource {
    node: String,
    list: Recipient<List>,
    watch: Recipient<Watch>,
    sink: Recipient<SourcePods>,
    pods: PodSet,
    /// A snapshot is due at the end of this turn.
    dirty: bool,
    /// Bumped per watch, so events of an abandoned watch are ignored.
    generation: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiPodSourceSummary {
    pub pods: usize,
    pub revision: u64,
}

/// One event of the current watch, or its end.
#[derive(Message)]
#[rtype(result = "()")]
enum Watched {
    Event(u64, WatchEvent),
    Ended(u64),
}

impl ApiPodSource {
    pub fn new(
        node: String,
        list: Recipient<List>,
        watch: Recipient<Watch>,
        sink: Recipient<SourcePods>,
    ) -> Self {
        Self {
            node,
            list,
            watch,
            sink,
            pods: PodSet::default(),
            dirty: false,
            generation: 0,
        }
    }

    fn selector(&self) -> Selector {
        let mut s = Selector::all(Kind::Pod);
        s.fields = FieldSelector::equals("spec.nodeName", &self.node);
        s
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

    fn relist(&mut self, ctx: &mut Context<Self>) {
        let msg = List {
            selector: self.selector(),
            limit: None,
            continue_token: None,
        };
        let list = self.list.clone();
        ctx.spawn(async move { list.send(msg).await }.into_actor(self).map(|r, act, ctx| match r {
            Ok(Ok(page)) => act.listed(page, ctx),
            other => {
                warn!(error = ?other.err().map(|e| e.to_string()), "cannot list pods from the store; retrying");
                ctx.run_later(RETRY, |act, ctx| act.relist(ctx));
            }
        }));
    }

    fn listed(&mut self, page: ListPage, ctx: &mut Context<Self>) {
        self.pods.reset(&page.items, page.revision);
        info!(
            pods = self.pods.len(),
            revision = page.revision,
            "pods from the store"
        );
        self.send_snapshot();
        self.rewatch(ctx);
    }

    fn rewatch(&mut self, ctx: &mut Context<Self>) {
        self.generation += 1;
        let generation = self.generation;
        let msg = Watch {
            selector: self.selector(),
            from: Some(self.pods.revision),
        };
        let watch = self.watch.clone();
        ctx.spawn(async move { watch.send(msg).await }.into_actor(self).map(move |r, act, ctx| match r {
            Ok(Ok(rx)) => act.follow(rx, generation, ctx),
            Ok(Err(StoreError::Gone { .. })) => act.relist(ctx),
            other => {
                warn!(error = ?other.err().map(|e| e.to_string()), "cannot watch pods; retrying");
                ctx.run_later(RETRY, |act, ctx| act.rewatch(ctx));
            }
        }));
    }

    fn follow(&mut self, rx: mpsc::Receiver<WatchEvent>, generation: u64, ctx: &mut Context<Self>) {
        let events = futures_util::stream::unfold(rx, move |mut rx| async move {
            rx.recv().await.map(|e| (Watched::Event(generation, e), rx))
        });
        let end = futures_util::stream::once(async move { Watched::Ended(generation) });
        ctx.add_message_stream(futures_util::StreamExt::chain(events, end));
    }
}

impl Actor for ApiPodSource {
    type Context = Context<Self>;
}

impl SupervisedActor for ApiPodSource {
    const KIND: &'static str = "api-pod-source";
    type Summary = ApiPodSourceSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        self.relist(ctx);
    }

    fn summary(&self) -> ApiPodSourceSummary {
        ApiPodSourceSummary {
            pods: self.pods.len(),
            revision: self.pods.revision,
        }
    }
}

impl Handler<Watched> for ApiPodSource {
    type Result = ();
    fn handle(&mut self, msg: Watched, ctx: &mut Context<Self>) {
        match msg {
            Watched::Event(g, _) | Watched::Ended(g) if g != self.generation => {}
            Watched::Event(_, WatchEvent::Change(c)) => {
                if c.kind == ChangeType::Deleted && self.pods.tombstone(&c.object) {
                    self.send_snapshot();
                }
                if self.pods.apply(c.kind, &c.object, c.revision) {
                    self.mark(ctx);
                }
            }
            Watched::Event(_, WatchEvent::Bookmark(rev)) => {
                self.pods.revision = self.pods.revision.max(rev)
            }
            Watched::Ended(_) => {
                info!(revision = self.pods.revision, "pod watch ended; resuming");
                ctx.run_later(Duration::from_millis(100), |act, ctx| act.rewatch(ctx));
            }
        }
    }
}

impl Handler<Rescan> for ApiPodSource {
    type Result = ();
    fn handle(&mut self, _: Rescan, _: &mut Context<Self>) {
        self.send_snapshot();
    }
}
