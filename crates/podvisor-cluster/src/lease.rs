//! The node's Lease (`kube-node-lease/<node>`): its heartbeat, as the kubelet's lease
//! controller keeps it. Renewed every 10 s with a 40 s duration, owned by the Node (so it
//! goes with it). The node lifecycle controller reads the renew time: a node that stops
//! renewing goes NotReady after the node monitor grace period, whatever its status says.
//!
//! The Lease is the one object only a cluster has (a standalone node has no node
//! lifecycle controller to read it), so it is written here with kube-rs directly rather
//! than through the typed client both APIs answer.
//!
//! Restart: nothing is kept; the next renewal reads the Lease again.

use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use kube::api::{Api, PostParams};
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use serde::Serialize;
use tracing::{info, warn};

use crate::RemoteClient;
use crate::error::from_kube;

/// A renewal finished (to the actor itself).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Renewed(Result<(), LeaseError>);

/// The kubelet's defaults.
pub const RENEW: Duration = Duration::from_secs(10);
pub const DURATION_SECONDS: i32 = 40;
const NAMESPACE: &str = "kube-node-lease";

/// The Lease for `node`, renewed `now`, as the node holds it: `old` with a new renew time,
/// or a new one owned by the Node (when its UID is known).
pub fn renewed(node: &str, node_uid: Option<&str>, old: Option<Lease>, now: MicroTime) -> Lease {
    let mut lease = old.unwrap_or_else(|| {
        let mut l = Lease::default();
        l.metadata.name = Some(node.to_string());
        l.metadata.namespace = Some(NAMESPACE.to_string());
        l
    });
    if lease.metadata.owner_references.is_none()
        && let Some(uid) = node_uid
    {
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.to_string(),
            uid: uid.to_string(),
            ..OwnerReference::default()
        }]);
    }
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(node.to_string());
    spec.lease_duration_seconds = Some(DURATION_SECONDS);
    spec.renew_time = Some(now);
    lease
}

#[derive(Debug, thiserror::Error)]
#[error("the node's Lease was not renewed: {0}")]
pub struct LeaseError(podvisor_client::Error);

impl From<kube::Error> for LeaseError {
    fn from(e: kube::Error) -> Self {
        LeaseError(from_kube(e, "Lease", ""))
    }
}

async fn renew(client: RemoteClient, node: String) -> Result<(), LeaseError> {
    let leases: Api<Lease> = client.api(Some(NAMESPACE));
    let now = MicroTime(podvisor_core::time::now().0);
    let old = leases.get_opt(&node).await?;
    let node_uid = match old
        .as_ref()
        .and_then(|l| l.metadata.owner_references.as_ref())
    {
        Some(_) => None,
        None => client
            .api::<Node>(None)
            .get_opt(&node)
            .await?
            .and_then(|n| n.metadata.uid),
    };
    let existed = old.is_some();
    let lease = renewed(&node, node_uid.as_deref(), old, now);
    let pp = PostParams::default();
    if existed {
        leases.replace(&node, &pp, &lease).await?;
    } else {
        leases.create(&pp, &lease).await?;
        info!(node = %node, "node lease created");
    }
    Ok(())
}

pub struct NodeLease {
    node: String,
    client: RemoteClient,
    me: Option<Recipient<Renewed>>,
    busy: bool,
    renewals: u64,
    failing: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeLeaseSummary {
    pub renewals: u64,
    pub failing: bool,
}

impl NodeLease {
    pub fn new(node: &str, cluster: &RemoteClient) -> Self {
        Self {
            node: node.to_string(),
            client: cluster.clone(),
            me: None,
            busy: false,
            renewals: 0,
            failing: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let Some(me) = self.me.clone() else { return };
        if self.busy {
            return;
        }
        self.busy = true;
        let work = renew(self.client.clone(), self.node.clone());
        ctx.spawn(async move { me.do_send(Renewed(work.await)) }.into_actor(self));
    }
}

impl Actor for NodeLease {
    type Context = Context<Self>;
}

impl SupervisedActor for NodeLease {
    const KIND: &'static str = "node-lease";
    type Summary = NodeLeaseSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.me = Some(start.me.recipient());
        self.busy = false;
        self.tick(ctx);
        ctx.run_interval(RENEW, |act, ctx| act.tick(ctx));
    }

    fn summary(&self) -> NodeLeaseSummary {
        NodeLeaseSummary {
            renewals: self.renewals,
            failing: self.failing,
        }
    }
}

impl Handler<Renewed> for NodeLease {
    type Result = ();
    fn handle(&mut self, Renewed(r): Renewed, _: &mut Context<Self>) {
        self.busy = false;
        match r {
            Ok(()) => {
                self.renewals += 1;
                self.failing = false;
            }
            Err(e) => {
                if !self.failing {
                    warn!(node = %self.node, error = %e, "node lease not renewed");
                }
                self.failing = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> MicroTime {
        MicroTime(
            podvisor_core::time::from_nanos(secs * 1_000_000_000)
                .unwrap()
                .0,
        )
    }

    #[test]
    fn a_new_lease_is_held_by_the_node_for_40_s_and_owned_by_it() {
        let l = renewed("n1", Some("uid-1"), None, at(100));
        assert_eq!(l.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let spec = l.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(at(100)));
        let owner = &l.metadata.owner_references.unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Node", "uid-1"));
    }

    #[test]
    fn a_renewal_moves_only_the_renew_time() {
        let first = renewed("n1", Some("uid-1"), None, at(100));
        let mut old = first.clone();
        old.metadata.resource_version = Some("7".into());
        let next = renewed("n1", None, Some(old), at(110));
        assert_eq!(next.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            next.metadata.owner_references,
            first.metadata.owner_references
        );
        assert_eq!(next.spec.unwrap().renew_time, Some(at(110)));
    }
}
