//! The node's side copied up: each pod's status as the node wrote it to its own store,
//! written to the cluster (the status writer's merge: the conditions the node does not own
//! are kept, the UID must match), and the deletions the node makes: one it starts (taint
//! eviction) becomes a graceful delete in the cluster, and a pod the node has finished and
//! removed from its store is removed from the cluster (grace 0, UID precondition), as the
//! kubelet's status manager removes it.
//!
//! A pod's first status after the agent starts is written as the status writer writes it
//! (read, then a patch with the UID as precondition); later ones are a patch from the
//! node's own last write, one request each, as the kubelet's status manager diffs from
//! what it knows. A pod new to the node owes nothing while its copy holds the status the
//! cluster gave it (the replica hands that status over, `FirstCopies`), and its first
//! status from the node is a patch from that one. A first write refused as Forbidden
//! (the cluster's Node authorizer learns of a binding from its own watch, milliseconds
//! after the node) is retried on its own after 50 ms, up to 5 times, before it waits the
//! shared backoff with other failures.
//!
//! While the cluster cannot be reached the work stays due and is retried; once it answers,
//! every pod's latest status goes up (only the latest: statuses in between are not
//! replayed).
//!
//! Restart: nothing is kept; listing the store again makes every status due, and what the
//! cluster already has costs a read. The cluster is listed too: a pod the node finished
//! and removed from its store before the last instance's delete went up is finished,
//! deleting and without a copy on the node, and is removed from the cluster then.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, DeleteParams, Error, Patch, PostParams, WatchEvent};
use podvisor_machinery::backoff::Backoff;
use podvisor_machinery::reflector::{Reflected, Reflector, Update};
use serde::Serialize;
use tracing::{debug, info, warn};

use super::first_copies::FirstCopies;
use crate::source::bound_to;
use crate::status::patch::status_patch;
use crate::status::shared::SharedStatuses;
use crate::status::write::{merged, write_status};

/// The cluster's pods the node finished and removed before this instance started (to the
/// actor itself), or why they could not be listed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Orphans(Result<Vec<Arc<Pod>>, Error>);

/// How long a failed listing of the cluster's orphans waits before the next.
const ORPHANS_RETRY: Duration = Duration::from_secs(30);

/// How long a first status write refused by the cluster's Node authorizer waits before
/// it is tried again (`Uplink::retry_soon`).
const AUTHORIZER_LAG: Duration = Duration::from_millis(50);

/// The cluster's pods bound to `node` that the node finished and removed from its store.
async fn orphans(node: String, cluster: Client, local: Client) -> Result<Vec<Arc<Pod>>, Error> {
    let mut found = Vec::new();
    for p in Api::<Pod>::all(cluster).list(&bound_to(&node)).await?.items {
        if super::admit::finished_and_removed(&local, &p).await? {
            found.push(p);
        }
    }
    Ok(found)
}

/// A job against the cluster finished (to the actor itself).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Done(Job, Result<(), Error>);

mod state;

use state::IN_FLIGHT;
#[cfg(test)]
use state::LAG_RETRIES;
pub(crate) use state::{Deletion, Job, Uplink};

/// Does one job against the cluster.
async fn run(cluster: Client, job: Job) -> Result<(), Error> {
    let (uid, status) = (job.pod.uid.clone(), job.pod.status.as_deref());
    let (ns, name) = (&job.key.0, &job.key.1);
    let written = match (&job.base, job.status) {
        (_, false) => true,
        (Some(base), true) => {
            // A refusal of a pod the node finished and removed: the cluster has it no more.
            let lag = job.first && job.deletion != Some(Deletion::Finished);
            let base = (base.as_ref(), job.first, lag);
            patch_from(&cluster, status, (ns, &uid, name), base).await?
        }
        (None, true) => match write_status(&cluster, (ns, status), &uid, name).await {
            Ok(written) => written.is_some(),
            // A pod the node finished and removed, the cluster's Node authorizer no longer
            // lets it read: the cluster has it no more. Forbidden for a live copy is retried
            // (`write_status`): the authorizer may not know yet that the pod is bound here.
            Err(Error::Forbidden { .. }) if job.deletion == Some(Deletion::Finished) => false,
            Err(e) => return Err(e),
        },
    };
    if !written {
        return Ok(()); // gone from the cluster, or another incarnation there
    }
    let grace = match job.deletion {
        None => return Ok(()),
        Some(Deletion::Finished) => 0,
        Some(Deletion::Graceful(g)) => g,
    };
    if grace == 0 {
        info!(pod = %name, pod_uid = %uid, "pod finished on the node; removing it from the cluster");
    }
    let params = DeleteParams {
        grace_seconds: Some(grace),
        precondition_uid: Some(uid),
        ..DeleteParams::default()
    };
    let api: Api<Pod> = Api::namespaced(cluster, ns);
    match api.delete(name, &params).await {
        Ok(_) | Err(Error::NotFound { .. } | Error::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The status written as a patch from `base`, the node's last write or (`theirs`) the
/// cluster's status in the pod's first copy (one request where `write_status` makes two);
/// false when the pod is gone (or no longer the node's: the Node authorizer forbids it,
/// unless it may not know the binding yet: `lag`, an error then). Refused as Invalid (the
/// UID precondition, or a status the cluster will not take from that base), it is written
/// as `write_status` writes it.
async fn patch_from(
    cluster: &Client,
    status: Option<&PodStatus>,
    (ns, uid, name): (&str, &str, &str),
    (base, theirs, lag): (&PodStatus, bool, bool),
) -> Result<bool, Error> {
    // From the cluster's own status, the conditions others set there stay, as
    // `write_status` keeps them from what it read.
    let ours = match theirs {
        true => merged(status, Some(base)),
        false => status.cloned().unwrap_or_default(),
    };
    let patch = Patch::Strategic(status_patch(uid, Some(base), &ours));
    let api: Api<Pod> = Api::namespaced(cluster.clone(), ns);
    match api.patch_status(name, &PostParams::default(), &patch).await {
        Ok(_) => Ok(true),
        Err(e @ Error::Forbidden { .. }) if lag => Err(e),
        Err(Error::NotFound { .. } | Error::Forbidden { .. }) => Ok(false),
        Err(Error::Invalid { .. }) => Ok(write_status(cluster, (ns, status), uid, name)
            .await?
            .is_some()),
        Err(e) => Err(e),
    }
}

pub struct ClusterUplink {
    node: String,
    local: Client,
    view: Reflector<Pod>,
    cluster: Client,
    state: Uplink,
    me: Option<Recipient<Done>>,
    retry_due: bool,
    written: usize,
    backoff: Backoff,
    shared: SharedStatuses,
    first_copies: FirstCopies,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterUplinkSummary {
    /// Pods with work due or in flight.
    pub due: usize,
    /// Jobs done since this instance started.
    pub written: usize,
}

impl ClusterUplink {
    pub fn new(node: &str, local: Client, cluster: Client) -> Self {
        Self {
            node: node.to_string(),
            local: local.clone(),
            view: Reflector::new(Api::all(local), bound_to(node)),
            cluster,
            state: Uplink::default(),
            me: None,
            retry_due: false,
            written: 0,
            // Failed work waits a growing, jittered while (0.8 s, doubling, to 30 s): many
            // nodes do not retry in step against a recovering apiserver.
            backoff: Backoff::default(),
            shared: SharedStatuses::default(),
            first_copies: FirstCopies::default(),
        }
    }

    /// Keeps a status equal to the one the status manager published as that copy.
    pub fn with_shared(mut self, shared: SharedStatuses) -> Self {
        self.shared = shared;
        self
    }

    /// Owes nothing for a new pod whose status is the cluster's in its first copy, as
    /// the replica holding `first_copies` made it.
    pub fn with_first_copies(mut self, first_copies: FirstCopies) -> Self {
        self.first_copies = first_copies;
        self
    }

    /// Lists the cluster for pods the node finished and removed before this instance.
    fn find_orphans(&mut self, ctx: &mut Context<Self>) {
        let work = orphans(self.node.clone(), self.cluster.clone(), self.local.clone());
        ctx.spawn(
            work.into_actor(self)
                .map(|found, _, ctx| ctx.notify(Orphans(found))),
        );
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        let Some(me) = self.me.clone() else { return };
        let room = IN_FLIGHT.saturating_sub(self.state.in_flight.len());
        for job in self.state.next(room) {
            let (cluster, me) = (self.cluster.clone(), me.clone());
            let work = async move {
                let r = run(cluster, job.clone()).await;
                me.do_send(Done(job, r));
            };
            ctx.spawn(work.into_actor(self));
        }
    }
}

impl Actor for ClusterUplink {
    type Context = Context<Self>;
}

impl SupervisedActor for ClusterUplink {
    const KIND: &'static str = "cluster-uplink";
    type Summary = ClusterUplinkSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.state = Uplink::sharing(self.shared.clone(), self.first_copies.clone());
        self.me = Some(start.me.recipient());
        self.view.start(ctx, start.me.recipient());
        self.find_orphans(ctx);
    }

    fn summary(&self) -> ClusterUplinkSummary {
        ClusterUplinkSummary {
            due: self.state.due(),
            written: self.written,
        }
    }
}

impl Handler<Reflected<Pod>> for ClusterUplink {
    type Result = ();
    fn handle(&mut self, msg: Reflected<Pod>, ctx: &mut Context<Self>) {
        if let Some(update) = self.view.accept(msg, ctx) {
            self.state.observe(update);
            self.pump(ctx);
        }
    }
}

impl Handler<Orphans> for ClusterUplink {
    type Result = ();
    fn handle(&mut self, Orphans(found): Orphans, ctx: &mut Context<Self>) {
        match found {
            Ok(pods) => {
                for p in pods {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    info!(pod = %name, "pod finished and removed on the node, still in the cluster; removing it there");
                    self.state.observe(Update::Change(WatchEvent::Deleted(p)));
                }
                self.pump(ctx);
            }
            Err(e) => {
                warn!(error = %e, retry_in = ?ORPHANS_RETRY, "cannot list the cluster's pods of this node");
                ctx.run_later(ORPHANS_RETRY, |act, ctx| act.find_orphans(ctx));
            }
        }
    }
}

impl Handler<Done> for ClusterUplink {
    type Result = ();
    fn handle(&mut self, Done(job, r): Done, ctx: &mut Context<Self>) {
        if matches!(r, Err(Error::Forbidden { .. })) && self.state.retry_soon(&job) {
            debug!(pod = %job.key.1, wait = ?AUTHORIZER_LAG, "status refused before the cluster's authorizer knew the pod is bound here; retrying it soon");
            ctx.run_later(AUTHORIZER_LAG, move |act, ctx| {
                act.state.unpark_one(&job.key);
                act.pump(ctx);
            });
            return;
        }
        let wait = match &r {
            Err(e) => {
                let wait = self.backoff.fail();
                let failures = self.backoff.failures;
                if self.backoff.loud() {
                    warn!(pod = %job.key.1, error = %e, failures, ?wait, "pod not written to the cluster; will retry");
                } else {
                    debug!(pod = %job.key.1, error = %e, failures, ?wait, "pod not written to the cluster; will retry");
                }
                Some(wait)
            }
            Ok(()) => {
                debug!(pod = %job.key.1, status = job.status, deletion = ?job.deletion, "written to the cluster");
                self.written += 1;
                self.backoff.reset();
                None
            }
        };
        self.state.done(&job, r.is_ok());
        match wait {
            None => self.pump(ctx),
            Some(wait) if !self.retry_due => {
                self.retry_due = true;
                ctx.run_later(wait, |act, ctx| {
                    act.retry_due = false;
                    act.state.unpark();
                    act.pump(ctx);
                });
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "uplink_tests.rs"]
mod tests;
