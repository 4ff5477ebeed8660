//! The node registrar actor: this node as a Node object, created at start and kept
//! current every period: capacity and allocatable, the Ready condition from the agent's
//! health (the PLEG and the runtime), the pressure conditions, addresses and `nodeInfo`.
//! The status is written when a condition changes, and at least once a minute (the
//! heartbeat), so a steady node costs one store write a minute.
//!
//! Restart: nothing is kept; it reads the Node back from the store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::Kind;
use podvisor_store::actor::{Create, Get, Update};
use podvisor_store::{Resource, StoreError, WriteOptions};
use serde::Serialize;
use serde_json::{Value, json};
use tracing::{info, warn};

mod facts;

pub use facts::NodeFacts;

/// Whether the node is healthy, and why not.
pub type HealthCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// A status write finished: the conditions it wrote, or why it failed. It comes back as
/// a message, so the debug summary shows it at once.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Written(Result<BTreeMap<String, String>, StoreError>);

/// How often the conditions are looked at. Only a change (or the heartbeat) is written,
/// so looking often costs a health check: at 10 s, a node stayed NotReady for up to 10 s
/// after the agent started, though its PLEG had relisted within a second.
const PERIOD: Duration = Duration::from_secs(1);
const HEARTBEAT: Duration = Duration::from_secs(60);

pub struct NodeRegistrar {
    facts: NodeFacts,
    health: HealthCheck,
    get: Recipient<Get>,
    create: Recipient<Create>,
    update: Recipient<Update>,
    /// The conditions last written, and when.
    last: Option<(BTreeMap<String, String>, Instant)>,
    busy: bool,
    me: Option<Recipient<Written>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRegistrarSummary {
    pub registered: bool,
    pub ready: Option<String>,
}

/// The Node's conditions: type → status ("True"/"False"), and the Ready reason.
fn conditions(health: &HealthCheck) -> (BTreeMap<String, String>, String) {
    let (ready, message) = match health() {
        Ok(()) => ("True", "podvisor is posting ready status".to_string()),
        Err(why) => ("False", why),
    };
    let mut c = BTreeMap::from([("Ready".to_string(), ready.to_string())]);
    for pressure in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        c.insert(pressure.to_string(), "False".to_string());
    }
    (c, message)
}

fn condition_json(kind: &str, status: &str, message: &str, now: &Value, since: &Value) -> Value {
    let reason = match (kind, status) {
        ("Ready", "True") => "KubeletReady".to_string(),
        ("Ready", _) => "KubeletNotReady".to_string(),
        (k, _) => format!("KubeletHasNo{k}"),
    };
    json!({"type": kind, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": since})
}

/// The status to write, keeping the transition time of unchanged conditions.
fn node_status(
    facts: &NodeFacts,
    old: &Value,
    conds: &BTreeMap<String, String>,
    message: &str,
) -> Value {
    let now = serde_json::to_value(podvisor_core::time::now()).unwrap_or(Value::Null);
    let list: Vec<Value> = conds
        .iter()
        .map(|(kind, status)| {
            let prev = old["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == kind.as_str()));
            let since = prev
                .filter(|p| p["status"] == status.as_str())
                .map_or(now.clone(), |p| p["lastTransitionTime"].clone());
            let msg = if kind == "Ready" { message } else { "" };
            condition_json(kind, status, msg, &now, &since)
        })
        .collect();
    let mut s = facts.status();
    s["conditions"] = Value::Array(list);
    s
}

fn store_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Db(e.to_string())
}

/// Creates the Node if it is missing, then writes its status.
async fn register(
    get: Recipient<Get>,
    create: Recipient<Create>,
    update: Recipient<Update>,
    name: String,
    body: Value,
    status: impl FnOnce(&Value) -> Value,
) -> Result<(), StoreError> {
    let res = Resource::of(Kind::Node);
    let current = get
        .send(Get {
            kind: Kind::Node,
            namespace: String::new(),
            name,
        })
        .await
        .map_err(store_err)?;
    let mut obj = match current {
        Ok(o) => o.value(),
        Err(StoreError::NotFound { .. }) => {
            let msg = Create {
                resource: res,
                namespace: None,
                body,
                opts: WriteOptions::default(),
            };
            create.send(msg).await.map_err(store_err)??.value()
        }
        Err(e) => return Err(e),
    };
    obj["status"] = status(&obj["status"]);
    let msg = Update {
        resource: res,
        body: obj,
        status_only: true,
        opts: WriteOptions::default(),
    };
    update.send(msg).await.map_err(store_err)?.map(|_| ())
}

impl NodeRegistrar {
    pub fn new(
        facts: NodeFacts,
        health: HealthCheck,
        get: Recipient<Get>,
        create: Recipient<Create>,
        update: Recipient<Update>,
    ) -> Self {
        Self {
            facts,
            health,
            get,
            create,
            update,
            last: None,
            busy: false,
            me: None,
        }
    }

    fn due(&self, now: &BTreeMap<String, String>) -> bool {
        match &self.last {
            None => true,
            Some((c, at)) => c != now || at.elapsed() >= HEARTBEAT,
        }
    }

    fn sync(&mut self, ctx: &mut Context<Self>) {
        let (conds, message) = conditions(&self.health);
        let Some(me) = self.me.clone() else { return };
        if self.busy || !self.due(&conds) {
            return;
        }
        self.busy = true;
        let (get, create, update) = (self.get.clone(), self.create.clone(), self.update.clone());
        let name = self.facts.name.clone();
        let body = self.facts.object();
        let (facts, written) = (self.facts.clone(), conds.clone());
        let work = register(get, create, update, name, body, move |old| {
            node_status(&facts, old, &written, &message)
        });
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
