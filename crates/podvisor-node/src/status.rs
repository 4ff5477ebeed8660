//! The status writer actor: the status manager's changes, written through the client.
//!
//! - An API pod's status goes through the status subresource, only while the stored pod
//!   is still the incarnation it describes (same UID). Once its termination completed, a
//!   pod marked for deletion is removed (grace 0, UID precondition), which is what ends a
//!   graceful `kubectl delete`.
//! - A static pod (from the manifest directory) gets a mirror pod: a read-only copy in the
//!   API, annotated `kubernetes.io/config.mirror`, with its status. The file is the
//!   truth: a mirror deleted through the API is removed and made again (the API says so in
//!   a warning), and the static pod keeps running. Mirrors are checked again every period.
//!
//! Writes for one pod are serialised and coalesced: while one is in flight, only the
//! newest status waits.
//!
//! It also answers the status manager's `PriorStatuses` at each of its starts: the
//! statuses the API holds for this node's pods (a mirror's as its static pod's), which are
//! the only durable copy.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client};
use podvisor_core::{ObjectKey, PodExt, PodUid, Uid};
use podvisor_kubelet::protocol::eviction::NodeEvent;
use podvisor_kubelet::protocol::status::{
    PodEvent, PriorStatuses, PublishedStatus, RepublishStatuses,
};
use tracing::warn;

use crate::MIRROR_ANNOTATION;
use podvisor_machinery::events::RecordEvent;
use serde::Serialize;
use shared::SharedStatuses;

#[cfg(test)]
mod decode_tests;
mod from_base;
pub(crate) mod patch;
pub mod shared;
pub(crate) mod write;

pub(crate) use write::ToWrite;

const MIRROR_CHECK: Duration = Duration::from_secs(5);
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

pub struct StatusWriter {
    client: Client,
    /// Where static pods' mirrors live: the same API, or in a cluster the cluster's (the
    /// node's store keeps API pods; a mirror is for the people looking at the cluster).
    mirrors: Client,
    node: String,
    events: Recipient<RecordEvent>,
    /// A static pod's mirror UID, once written: its events name the object the API shows.
    mirror_uids: HashMap<PodUid, Uid>,
    /// The newest status not yet written, per pod.
    pending: HashMap<PodUid, ToWrite>,
    /// Each API pod's status as the API answered its last write: the next write is a
    /// patch from it, without a read (`from_base.rs`). Lost with a failed write. Mostly
    /// the status manager's own `Arc` (`write::as_base`): a slot with the status inline
    /// was some 630 bytes (0.65 MB with 500 pods' 1,024 slots), and a copy of each
    /// status 0.96 MB more.
    bases: HashMap<PodUid, Arc<k8s_openapi::api::core::v1::PodStatus>>,
    /// Pods gone while their write was in flight: that write leaves no base.
    forget: HashSet<PodUid>,
    in_flight: HashSet<PodUid>,
    /// Pods whose last write failed, waiting for their retry; and each one's next delay.
    retrying: HashSet<PodUid>,
    retry_after: HashMap<PodUid, Duration>,
    /// Static pods' newest state, for the periodic mirror check.
    statics: HashMap<PodUid, ToWrite>,
    /// The version each static pod's mirror had when its status was last written: a
    /// periodic check of a mirror at that version is one lookup (at every check, the
    /// whole status was compared again: 500 static pods cost the agent a steady share of a
    /// core).
    mirror_revs: HashMap<PodUid, String>,
    written: u64,
    failed: u64,
    /// Where every status comes from: asked for all of them again at each start.
    republish: Option<Recipient<RepublishStatuses>>,
    /// Each pod's newest status, for the uplink to share.
    shared: SharedStatuses,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusWriterSummary {
    pub pending: usize,
    pub retrying: usize,
    pub in_flight: usize,
    pub mirrors: usize,
    pub written: u64,
    pub failed: u64,
}

impl StatusWriter {
    pub fn new(node: &str, client: Client, events: Recipient<RecordEvent>) -> Self {
        Self {
            mirrors: client.clone(),
            client,
            node: node.to_string(),
            events,
            mirror_uids: HashMap::new(),
            pending: HashMap::new(),
            bases: HashMap::new(),
            forget: HashSet::new(),
            in_flight: HashSet::new(),
            retrying: HashSet::new(),
            retry_after: HashMap::new(),
            statics: HashMap::new(),
            mirror_revs: HashMap::new(),
            written: 0,
            failed: 0,
            republish: None,
            shared: SharedStatuses::default(),
        }
    }

    /// Asks `source` (the status manager) for every status at each start: a restarted
    /// writer has lost which pods are static, and would not check their mirrors again
    /// until each one's status changed.
    pub fn with_republish(mut self, source: Option<Recipient<RepublishStatuses>>) -> Self {
        self.republish = source;
        self
    }

    /// Publishes each pod's newest status in `shared` (the uplink's copies share them).
    pub fn with_shared(mut self, shared: SharedStatuses) -> Self {
        self.shared = shared;
        self
    }

    /// Makes static pods' mirrors in `mirrors` rather than in the API statuses go to.
    pub fn with_mirrors(mut self, mirrors: Client) -> Self {
        self.mirrors = mirrors;
        self
    }

    fn start(&mut self, uid: PodUid, ctx: &mut Context<Self>) {
        if self.in_flight.contains(&uid) || self.retrying.contains(&uid) {
            return;
        }
        let Some(to_write) = self.pending.remove(&uid) else {
            return;
        };
        self.in_flight.insert(uid.clone());
        let clients = (self.client.clone(), self.mirrors.clone());
        let (w, base) = (to_write.clone(), self.bases.remove(&uid));
        let work = async move { write::write(&clients, &w, base).await };
        ctx.spawn(work.into_actor(self).map(move |written, act, ctx| {
            act.in_flight.remove(&uid);
            // A pod that went meanwhile keeps no base (it would stay for good).
            let gone = act.forget.remove(&uid);
            match written {
                Ok(written) => {
                    act.written += 1;
                    if let Some(base) = written.base.filter(|_| !gone) {
                        act.bases.insert(uid.clone(), base);
                    }
                    if let Some((m, revision)) = written.mirror {
                        act.mirror_uids.insert(uid.clone(), m);
                        act.mirror_revs.insert(uid.clone(), revision);
                    }
                    act.retry_after.remove(&uid);
                }
                Err(()) => {
                    act.failed += 1;
                    act.retry(uid.clone(), to_write, ctx);
                    return;
                }
            }
            act.start(uid, ctx);
        }));
    }

    /// A write the store refused or failed is tried again, after a delay that doubles
    /// per failure (a pod whose removal was not written would otherwise stay Terminating
    /// in the API forever). A newer status waiting meanwhile replaces it.
    fn retry(&mut self, uid: PodUid, failed: ToWrite, ctx: &mut Context<Self>) {
        self.pending.entry(uid.clone()).or_insert(failed);
        let delay = self
            .retry_after
            .get(&uid)
            .map_or(RETRY_FIRST, |d| (*d * 2).min(RETRY_MAX));
        self.retry_after.insert(uid.clone(), delay);
        self.retrying.insert(uid.clone());
        ctx.run_later(delay, move |act, ctx| {
            act.retrying.remove(&uid);
            act.start(uid, ctx);
        });
    }

    fn check_mirrors(&mut self, ctx: &mut Context<Self>) {
        let uids: Vec<PodUid> = self.statics.keys().cloned().collect();
        for uid in uids {
            if self.pending.contains_key(&uid) || self.in_flight.contains(&uid) {
                continue;
            }
            let Some(to_write) = self.statics.get(&uid).cloned() else {
                continue;
            };
            let Some(version) = self.mirror_revs.get(&uid).cloned() else {
                self.rewrite(uid, to_write, ctx);
                continue;
            };
            let client = self.mirrors.clone();
            let pod = to_write.pod;
            let check = async move {
                write::mirror_unchanged(&client, pod.namespace(), pod.name(), &version).await
            };
            ctx.spawn(check.into_actor(self).map(move |unchanged, act, ctx| {
                if !unchanged && let Some(pod) = act.statics.get(&uid).cloned() {
                    act.mirror_revs.remove(&uid);
                    act.rewrite(uid, pod, ctx);
                }
            }));
        }
    }

    /// Writes a static pod's status and mirror again.
    fn rewrite(&mut self, uid: PodUid, to_write: ToWrite, ctx: &mut Context<Self>) {
        self.pending.entry(uid.clone()).or_insert(to_write);
        self.start(uid, ctx);
    }
}

impl StatusWriter {
    /// A pod's event, about the object the API shows: a static pod's mirror.
    fn record(&self, pod: &Pod, event: PodEvent) {
        let uid = pod.metadata.uid.as_deref().map(PodUid::from);
        let shown = match uid.as_ref().and_then(|u| self.mirror_uids.get(u)) {
            Some(mirror) => Some(mirror.clone()),
            None => uid.map(|u| Uid::from(u.as_str())),
        };
        let mut object = ObjectKey::pod(pod.namespace(), pod.name());
        object.uid = shown;
        self.events.do_send(RecordEvent {
            object,
            type_: event.kind,
            reason: event.reason,
            message: event.message,
        });
    }
}

impl Actor for StatusWriter {
    type Context = Context<Self>;
}

/// An event about the node itself (eviction, image garbage collection): the kubelet's
/// names its Node, with the node's name as its UID.
impl Handler<NodeEvent> for StatusWriter {
    type Result = ();
    fn handle(&mut self, e: NodeEvent, _: &mut Context<Self>) {
        let object = ObjectKey::new(podvisor_core::Kind::Node, None, &self.node)
            .with_uid(Uid::from(self.node.as_str()));
        self.events.do_send(RecordEvent {
            object,
            type_: e.kind,
            reason: e.reason.to_string(),
            message: e.message,
        });
    }
}

impl SupervisedActor for StatusWriter {
    const KIND: &'static str = "status-writer";
    type Summary = StatusWriterSummary;

    /// Rebuilt from the status manager, which holds every status: it publishes them all
    /// again when asked (and by itself when it restarts).
    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        if let Some(source) = &self.republish {
            source.do_send(RepublishStatuses);
        }
        ctx.run_interval(MIRROR_CHECK, |act, ctx| act.check_mirrors(ctx));
    }

    fn summary(&self) -> StatusWriterSummary {
        StatusWriterSummary {
            pending: self.pending.len(),
            retrying: self.retrying.len(),
            in_flight: self.in_flight.len(),
            mirrors: self.statics.len(),
            written: self.written,
            failed: self.failed,
        }
    }
}

impl Handler<PublishedStatus> for StatusWriter {
    type Result = ();
    fn handle(&mut self, msg: PublishedStatus, ctx: &mut Context<Self>) {
        match msg {
            PublishedStatus::Changed {
                pod,
                status,
                terminated,
            } => {
                let Some(uid) = pod.metadata.uid.as_deref().map(PodUid::from) else {
                    return;
                };
                self.shared.publish(&uid, &status);
                let to_write = ToWrite {
                    pod,
                    status,
                    terminated,
                };
                if to_write.pod.is_static() {
                    // A mirror's periodic rewrite does not remove anything.
                    let kept = ToWrite {
                        terminated: false,
                        ..to_write.clone()
                    };
                    self.statics.insert(uid.clone(), kept);
                }
                self.pending.insert(uid.clone(), to_write);
                self.start(uid, ctx);
            }
            PublishedStatus::Event { pod, event } => self.record(&pod, event),
            PublishedStatus::Gone { uid, pod } => {
                self.pending.remove(&uid);
                self.bases.remove(&uid);
                self.shared.forget(&uid);
                if self.in_flight.contains(&uid) {
                    self.forget.insert(uid.clone());
                }
                self.mirror_uids.remove(&uid);
                self.mirror_revs.remove(&uid);
                self.retry_after.remove(&uid);
                // Known from a status since this start, or (a static pod removed while
                // the agent was down) from the status manager's last record of it.
                let known = self.statics.remove(&uid).map(|w| w.pod);
                if let Some(pod) = known.or(pod.filter(|p| p.is_static())) {
                    let client = self.mirrors.clone();
                    ctx.spawn(
                        async move { write::remove_mirror(&client, &pod).await }.into_actor(self),
                    );
                }
            }
        }
    }
}

/// A pod of the API as the kubelet runs it: a mirror as its static pod (the static pod's
/// UID, without the mirror's annotation).
fn as_run(p: Arc<Pod>) -> Arc<Pod> {
    let Some(static_uid) = write::mirror_of(&p).map(str::to_string) else {
        return p;
    };
    let mut m = (*p).clone();
    m.metadata.uid = Some(static_uid);
    if let Some(a) = m.metadata.annotations.as_mut() {
        a.remove(MIRROR_ANNOTATION);
    }
    Arc::new(m)
}

impl Handler<PriorStatuses> for StatusWriter {
    type Result = ResponseFuture<Vec<Arc<Pod>>>;
    fn handle(&mut self, _: PriorStatuses, _: &mut Context<Self>) -> Self::Result {
        let api: Api<Pod> = Api::all(self.client.clone());
        let bound = crate::source::bound_to(&self.node);
        Box::pin(async move {
            match api.list(&bound).await {
                Ok(page) => page.items.into_iter().map(as_run).collect(),
                Err(e) => {
                    warn!(error = %e, "the API's pod statuses could not be listed");
                    Vec::new()
                }
            }
        })
    }
}
