//! The node registrar actor: this node as a Node object, created at start and kept
//! current every period: capacity and allocatable, the Ready condition from the agent's
//! health (the PLEG and the runtime), the pressure conditions, addresses and `nodeInfo`.
//! The status is written when a condition changes, and at least once a minute (the
//! heartbeat), so a steady node costs one store write a minute.
//!
//! Restart: nothing is kept; it reads the Node back from the API.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, Error, PostParams};
use podvisor_eviction::Pressure;
use podvisor_kubelet::protocol::eviction::NodePressure;
use serde::Serialize;
use tracing::{info, warn};

mod facts;
mod pressure;

pub use facts::NodeFacts;

/// Why the node is not healthy (the Ready condition's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unhealthy(pub String);

/// Whether the node is healthy, and why not.
pub type HealthCheck = Arc<dyn Fn() -> Result<(), Unhealthy> + Send + Sync>;

/// A status write finished: the conditions it wrote, or why it failed. It comes back as
/// a message, so the debug summary shows it at once.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Written(Result<BTreeMap<String, String>, Error>);

/// How often the conditions are looked at. Only a change (or the heartbeat) is written,
/// so looking often costs a health check: at 10 s, a node stayed NotReady for up to 10 s
/// after the agent started, though its PLEG had relisted within a second.
const PERIOD: Duration = Duration::from_secs(1);
const HEARTBEAT: Duration = Duration::from_secs(60);

pub struct NodeRegistrar {
    facts: NodeFacts,
    health: HealthCheck,
    nodes: Api<Node>,
    /// The conditions last written, and when.
    last: Option<(BTreeMap<String, String>, Instant)>,
    busy: bool,
    me: Option<Recipient<Written>>,
    /// The eviction manager's conditions, and whether this node sets their taints itself
    /// (standing alone; in a cluster the node lifecycle controller does).
    pressure: NodePressure,
    pressure_taints: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRegistrarSummary {
    pub registered: bool,
    pub ready: Option<String>,
}

/// The Node's conditions: type → status ("True"/"False"), and the Ready reason.
fn conditions(
    health: &HealthCheck,
    under: &BTreeSet<Pressure>,
) -> (BTreeMap<String, String>, String) {
    let (ready, message) = match health() {
        Ok(()) => ("True", "podvisor is posting ready status".to_string()),
        Err(why) => ("False", why.0),
    };
    let mut c = BTreeMap::from([("Ready".to_string(), ready.to_string())]);
    for (kind, status, _, _) in pressure::conditions(under) {
        c.insert(kind.to_string(), status.to_string());
    }
    (c, message)
}

/// A condition's reason and message: Ready's from the health check, the pressure
/// conditions' the kubelet's.
fn words(kind: &str, status: &str, ready_message: &str) -> (&'static str, String) {
    let pressure = Pressure::ALL.into_iter().find(|p| p.condition() == kind);
    match (kind, status, pressure) {
        (_, _, Some(p)) => {
            let (reason, message) = p.reason(status == "True");
            (reason, message.to_string())
        }
        ("Ready", "True", None) => ("KubeletReady", ready_message.to_string()),
        _ => ("KubeletNotReady", ready_message.to_string()),
    }
}

fn condition(kind: &str, status: &str, message: &str, now: &Time, since: Time) -> NodeCondition {
    let (reason, message) = words(kind, status, message);
    NodeCondition {
        type_: kind.into(),
        status: status.into(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(since),
    }
}

/// The status to write, keeping the transition time of unchanged conditions.
fn node_status(
    facts: &NodeFacts,
    old: Option<&NodeStatus>,
    conds: &BTreeMap<String, String>,
    message: &str,
) -> NodeStatus {
    let now = podvisor_core::time::now();
    let before = old.and_then(|s| s.conditions.as_ref());
    let list = conds
        .iter()
        .map(|(kind, status)| {
            let prev = before.and_then(|cs| cs.iter().find(|c| c.type_ == *kind));
            let since = prev
                .filter(|p| p.status == *status)
                .and_then(|p| p.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            condition(kind, status, message, &now, since)
        })
        .collect();
    NodeStatus {
        conditions: Some(list),
        ..facts.status()
    }
}

/// Creates the Node if it is missing, sets its pressure taints when it manages them
/// (`taints`), then writes its status.
async fn register(
    nodes: Api<Node>,
    first: Node,
    status: impl Fn(Option<&NodeStatus>) -> NodeStatus,
    taints: Option<BTreeSet<Pressure>>,
) -> Result<(), Error> {
    let name = first.metadata.name.clone().unwrap_or_default();
    let pp = PostParams::default();
    // In a cluster the controller manager writes the Node too (taints, annotations): a
    // write that lost the race is read and made again at once.
    let mut attempts = 3;
    loop {
        let current = match nodes.get_opt(&name).await? {
            Some(n) => n,
            None => nodes.create(&pp, first.clone()).await?,
        };
        let mut next = (*current).clone();
        let spec = taints
            .as_ref()
            .and_then(|t| pressure::with_taints(next.spec.as_ref(), t));
        if let Some(spec) = spec {
            next.spec = Some(spec);
            next = match nodes.replace(&pp, next).await {
                Ok(n) => (*n).clone(),
                Err(Error::Conflict { .. }) if attempts > 1 => {
                    attempts -= 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
        }
        next.status = Some(status(next.status.as_ref()));
        match nodes.replace_status(&pp, next).await {
            Err(Error::Conflict { .. }) if attempts > 1 => attempts -= 1,
            r => return r.map(|_| ()),
        }
    }
}

impl NodeRegistrar {
    pub fn new(facts: NodeFacts, health: HealthCheck, client: Client) -> Self {
        Self {
            facts,
            health,
            nodes: Api::all(client),
            last: None,
            busy: false,
            me: None,
            pressure: NodePressure::default(),
            pressure_taints: false,
        }
    }

    /// Reports `pressure`'s conditions, and with `taints` their taints too.
    pub fn with_pressure(mut self, pressure: NodePressure, taints: bool) -> Self {
        self.pressure = pressure;
        self.pressure_taints = taints;
        self
    }

    fn due(&self, now: &BTreeMap<String, String>) -> bool {
        match &self.last {
            None => true,
            Some((c, at)) => c != now || at.elapsed() >= HEARTBEAT,
        }
    }

    fn sync(&mut self, ctx: &mut Context<Self>) {
        let under = self.pressure.get();
        let (conds, message) = conditions(&self.health, &under);
        let Some(me) = self.me.clone() else { return };
        if self.busy || !self.due(&conds) {
            return;
        }
        self.busy = true;
        let first = self.facts.object();
        let (facts, written) = (self.facts.clone(), conds.clone());
        let taints = self.pressure_taints.then_some(under);
        let work = register(
            self.nodes.clone(),
            first,
            move |old| node_status(&facts, old, &written, &message),
            taints,
        );
        let done = async move { me.do_send(Written(work.await.map(|()| conds))) };
        ctx.spawn(done.into_actor(self));
    }
}

impl Handler<Written> for NodeRegistrar {
    type Result = ();

    fn handle(&mut self, Written(r): Written, _: &mut Context<Self>) {
        self.busy = false;
        match r {
            Ok(conds) => {
                if self.last.as_ref().is_none_or(|(c, _)| *c != conds) {
                    info!(node = %self.facts.name, ready = %conds["Ready"], "node status written");
                }
                self.last = Some((conds, Instant::now()));
            }
            Err(e) => warn!(node = %self.facts.name, error = %e, "node status not written"),
        }
    }
}

impl Actor for NodeRegistrar {
    type Context = Context<Self>;
}

impl SupervisedActor for NodeRegistrar {
    const KIND: &'static str = "node-registrar";
    type Summary = NodeRegistrarSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.me = Some(start.me.recipient());
        self.last = None;
        self.busy = false;
        self.sync(ctx);
        ctx.run_interval(PERIOD, |act, ctx| act.sync(ctx));
    }

    fn summary(&self) -> NodeRegistrarSummary {
        NodeRegistrarSummary {
            registered: self.last.is_some(),
            ready: self
                .last
                .as_ref()
                .and_then(|(c, _)| c.get("Ready").cloned()),
        }
    }
}
