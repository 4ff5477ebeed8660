//! The cluster's side copied down: the pods bound to this node, and the Node, from the
//! cluster's API into the node's own store, where the kubelet's pod source, the taint
//! eviction scheduler and the node's read-only API find them. Because the store keeps
//! them, pods run on (and an agent restarted meanwhile adopts them) while the cluster is
//! away; the store keeps the node's own status over the copies (`Backend::replicate`).
//!
//! A list from the cluster is the truth: a copy of a pod the list does not have is
//! forgotten (the pod was deleted, or bound elsewhere, while the node was away), and the
//! kubelet stops it. Mirror pods are the node's own and are never copied down.
//! A change that shows a pod the node finished and has already removed (the uplink's
//! final status arriving before the cluster's delete) is not copied back; a list still
//! copies it, so a cluster delete the uplink never made is made after a relist.
//!
//! A copy the store fails to write for a while (its actor restarting, its disk full) is
//! not dropped: it is tried again for some 15 s, the copies behind it waiting, and then
//! the replica stops with the error, and its restart lists the cluster again and copies
//! everything (so a store that stays broken costs a restart per 15 s, within the
//! supervisor's intensity). A copy the store refuses for what it is is logged and left:
//! trying again would not change the answer.
//!
//! Restart: nothing is kept; it lists the cluster again and copies what it finds.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_actors::{ActorRef, Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, DeleteParams, Error, ListParams, WatchEvent};
use podvisor_machinery::reflector::{Reflected, Reflector, Update};
use serde::Serialize;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::first_copies::FirstCopies;
use crate::podset::is_mirror;
use crate::source::bound_to;

/// The store failed a copy in a way that may pass later (to the actor itself): it stops
/// with the error, and its restart copies everything again.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct CopyFailed(Error);

/// The waits between tries of a copy the store fails transiently, before the replica
/// starts over.
const RETRIES: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
];

/// One write to the node's store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// A copy from a list: always written.
    Keep(Arc<Pod>),
    /// A copy from a change: written unless it is a pod the node finished and removed.
    Refresh(Arc<Pod>),
    KeepNode(Arc<Node>),
    /// Forget the copy of this incarnation (namespace, name, UID).
    Forget(String, String, String),
    /// Forget every copy but these UIDs (after a list from the cluster).
    ForgetAllBut(BTreeSet<String>),
}

/// What a change in the cluster asks of the node's store.
pub(crate) fn ops(update: Update<Pod>) -> Vec<Op> {
    match update {
        Update::Reset(items) => {
            let kept: Vec<_> = items
                .into_iter()
                .filter(|p| !is_mirror(p))
                .map(stripped)
                .collect();
            let uids = kept.iter().filter_map(|p| p.metadata.uid.clone()).collect();
            let mut ops: Vec<Op> = kept.into_iter().map(Op::Keep).collect();
            ops.push(Op::ForgetAllBut(uids));
            ops
        }
        Update::Change(WatchEvent::Added(p) | WatchEvent::Modified(p)) if !is_mirror(&p) => {
            vec![Op::Refresh(stripped(p))]
        }
        Update::Change(WatchEvent::Deleted(p)) if !is_mirror(&p) => {
            let m = &p.metadata;
            vec![Op::Forget(
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default(),
                m.uid.clone().unwrap_or_default(),
            )]
        }
        Update::Change(_) => Vec::new(),
    }
}

/// The cluster's object as the node keeps it: without `managedFields`, the cluster's
/// record of which client set each field (server-side apply's bookkeeping, about a third
/// of a running pod's JSON, and most of its decoded allocations). Nothing on the node reads
/// them, and every stored version, watch event and decode of a copy would carry them
/// (client-go's informers strip them the same way: `TransformStripManagedFields`).
fn stripped<K>(o: Arc<K>) -> Arc<K>
where
    K: Metadata<Ty = ObjectMeta> + Clone,
{
    if o.metadata().managed_fields.is_none() {
        return o;
    }
    let mut o = Arc::unwrap_or_clone(o);
    o.metadata_mut().managed_fields = None;
    Arc::new(o)
}

pub struct ClusterReplica {
    target: Target,
    pods_view: Reflector<Pod>,
    node_view: Reflector<Node>,
    queue: Option<mpsc::UnboundedSender<Op>>,
    me: Option<ActorRef<Self>>,
    copies: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReplicaSummary {
    pub synced: bool,
    pub version: String,
    /// Copies written to the store since this instance started.
    pub copies: usize,
}

impl ClusterReplica {
    pub fn new(node: &str, cluster: Client, local: Client) -> Self {
        let node_params = ListParams::default().field_equals("metadata.name", node);
        Self {
            target: Target {
                node: node.to_string(),
                local,
                first: FirstCopies::default(),
            },
            pods_view: Reflector::new(Api::all(cluster.clone()), bound_to(node)),
            node_view: Reflector::new(Api::all(cluster), node_params),
            queue: None,
            me: None,
            copies: 0,
        }
    }

    /// Hands each first copy's status to the uplink holding `first`.
    pub fn with_first_copies(mut self, first: FirstCopies) -> Self {
        self.target.first = first;
        self
    }

    fn send(&mut self, ops: Vec<Op>) {
        self.copies += ops.len();
        if let Some(q) = &self.queue {
            for op in ops {
                let _ = q.send(op);
            }
        }
    }
}

/// Where the copies go: the node's store; and the statuses of first copies, for the uplink.
#[derive(Clone)]
struct Target {
    node: String,
    local: Client,
    first: FirstCopies,
}

/// Applies the writes one at a time, in order (a pod's copy before its forgetting), until
/// one fails in a way that may pass later: the actor hears of it and stops.
async fn apply_all(to: Target, mut rx: mpsc::UnboundedReceiver<Op>, failed: Recipient<CopyFailed>) {
    while let Some(op) = rx.recv().await {
        match apply_retrying(&to, op).await {
            Ok(()) => {}
            Err(e) if e.is_transient() => {
                failed.do_send(CopyFailed(e));
                return;
            }
            Err(e) => warn!(error = %e, "the store refused a copy of the cluster's object"),
        }
    }
}

/// `apply`, tried again after each of `RETRIES` while the store fails transiently.
async fn apply_retrying(to: &Target, op: Op) -> Result<(), Error> {
    let mut waits = RETRIES.iter();
    loop {
        match apply(to, op.clone()).await {
            Err(e) if e.is_transient() => {
                let Some(wait) = waits.next() else {
                    return Err(e);
                };
                warn!(error = %e, retry_in = ?wait, "the store failed a copy of the cluster's object");
                tokio::time::sleep(*wait).await;
            }
            r => return r,
        }
    }
}

async fn apply(to: &Target, op: Op) -> Result<(), Error> {
    let (node, local) = (to.node.as_str(), &to.local);
    match op {
        Op::Keep(p) => keep(to, p).await,
        Op::Refresh(p) => {
            if super::admit::finished_and_removed(local, &p).await? {
                let name = p.metadata.name.as_deref().unwrap_or_default();
                debug!(
                    pod = name,
                    "the final status of a pod the node removed; not copied back"
                );
                return Ok(());
            }
            keep(to, p).await
        }
        Op::KeepNode(n) => {
            let api: Api<Node> = Api::all(local.clone());
            api.replicate((*n).clone()).await.map(|_| ())
        }
        Op::Forget(ns, name, uid) => forget(local, &ns, &name, &uid).await,
        Op::ForgetAllBut(keep) => {
            let api: Api<Pod> = Api::all(local.clone());
            for p in api.list(&bound_to(node)).await?.items {
                let m = &p.metadata;
                let uid = m.uid.clone().unwrap_or_default();
                if is_mirror(&p) || keep.contains(&uid) {
                    continue;
                }
                let (ns, name) = (m.namespace.as_deref(), m.name.as_deref());
                info!(pod = name.unwrap_or_default(), pod_uid = %uid, "pod no longer bound to this node in the cluster; forgetting it");
                forget(
                    local,
                    ns.unwrap_or_default(),
                    name.unwrap_or_default(),
                    &uid,
                )
                .await?;
            }
            Ok(())
        }
    }
}

async fn keep(to: &Target, p: Arc<Pod>) -> Result<(), Error> {
    let copied = super::admit::copy(&to.local, &to.node, p).await?;
    let p = copied.pod;
    if copied.first
        && let (Some(uid), Some(status)) = (p.metadata.uid.as_deref(), &p.status)
    {
        to.first.hand_over(uid, Arc::new(status.clone()));
    }
    let api: Api<Pod> = Api::all(to.local.clone());
    api.replicate((*p).clone()).await?;
    let (name, uid) = (p.metadata.name.as_deref(), p.metadata.uid.as_deref());
    debug!(pod = name, pod_uid = uid, "pod copied from the cluster");
    Ok(())
}

async fn forget(local: &Client, ns: &str, name: &str, uid: &str) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(local.clone(), ns);
    match api.delete(name, &DeleteParams::now_if_uid(uid)).await {
        Ok(_) | Err(Error::NotFound { .. } | Error::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Actor for ClusterReplica {
    type Context = Context<Self>;
}

impl SupervisedActor for ClusterReplica {
    const KIND: &'static str = "cluster-replica";
    type Summary = ClusterReplicaSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.queue = Some(tx);
        self.me = Some(start.me.clone());
        let work = apply_all(self.target.clone(), rx, start.me.recipient());
        ctx.spawn(work.into_actor(self));
        self.pods_view.start(ctx, start.me.recipient());
        self.node_view.start(ctx, start.me.recipient());
    }

    fn summary(&self) -> ClusterReplicaSummary {
        ClusterReplicaSummary {
            synced: self.pods_view.synced,
            version: self.pods_view.version.clone(),
            copies: self.copies,
        }
    }
}

impl Handler<Reflected<Pod>> for ClusterReplica {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        if let Some(update) = self.pods_view.accept(msg, ctx) {
            if let Update::Reset(items) = &update {
                info!(
                    pods = items.len(),
                    "pods bound to this node, from the cluster"
                );
            }
            self.send(ops(update));
        }
    }
}

impl Handler<CopyFailed> for ClusterReplica {
    type Result = ();
    fn handle(&mut self, CopyFailed(e): CopyFailed, ctx: &mut Context<Self>) {
        warn!(error = %e, "a copy of the cluster's object was not written to the store; starting over");
        if let Some(me) = &self.me {
            me.fail(ctx, format!("a copy was not written to the store: {e}"));
        }
    }
}

impl Handler<Reflected<Node>> for ClusterReplica {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Node>, ctx: &mut Context<Self>) {
        let nodes = match self.node_view.accept(msg, ctx) {
            Some(Update::Reset(items)) => items,
            Some(Update::Change(WatchEvent::Added(n) | WatchEvent::Modified(n))) => vec![n],
            _ => Vec::new(),
        };
        self.send(nodes.into_iter().map(stripped).map(Op::KeepNode).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, uid: &str, mirror: bool) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some(uid.into());
        if mirror {
            p.metadata.annotations = Some([(crate::MIRROR_ANNOTATION.into(), "x".into())].into());
        }
        Arc::new(p)
    }

    #[test]
    fn a_list_keeps_what_it_has_and_forgets_the_rest_but_never_copies_mirrors() {
        let a = pod("a", "u-a", false);
        let m = pod("m", "u-m", true);
        let got = ops(Update::Reset(vec![a.clone(), m]));
        assert_eq!(
            got,
            vec![
                Op::Keep(a),
                Op::ForgetAllBut(BTreeSet::from(["u-a".to_string()]))
            ]
        );
    }

    #[test]
    fn a_deletion_in_the_cluster_forgets_that_incarnation_only() {
        let got = ops(Update::Change(WatchEvent::Deleted(pod("a", "u-a", false))));
        assert_eq!(
            got,
            vec![Op::Forget("default".into(), "a".into(), "u-a".into())]
        );
        let mirror = ops(Update::Change(WatchEvent::Deleted(pod("m", "u-m", true))));
        assert!(mirror.is_empty());
    }

    #[test]
    fn copies_leave_the_clusters_managed_fields_behind() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let mut p = (*pod("a", "u-a", false)).clone();
        p.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            ..ManagedFieldsEntry::default()
        }]);
        let p = Arc::new(p);
        let mut want = (*p).clone();
        want.metadata.managed_fields = None;
        let want = Arc::new(want);
        let listed = ops(Update::Reset(vec![p.clone()]));
        assert_eq!(listed[0], Op::Keep(want.clone()));
        let changed = ops(Update::Change(WatchEvent::Modified(p)));
        assert_eq!(changed, vec![Op::Refresh(want)]);
    }
}
