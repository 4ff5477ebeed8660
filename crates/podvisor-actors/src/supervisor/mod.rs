//! The supervisor: an actor that starts its children, restarts them when they crash (with
//! backoff), and gives up, stopping them all and escalating to its own supervisor, when
//! crashes come faster than the restart intensity allows. At the root, escalation ends
//! the process with a non-zero exit so the service manager restarts it, and level-driven
//! start-up adopts whatever is running.

mod child;
mod handlers;
pub mod policy;
mod root;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, StreamHandler};
use serde::Serialize;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::time::Instant;
use tracing::{error, info, warn};

pub use child::{ChildBuilder, ChildSpec, Reserved, Restart};
pub use policy::{Backoff, Decision, Intensity, RestartTracker, Scope};
pub use root::{Escalation, start_root};

use crate::actor::{StartInfo, SupervisedActor};
use crate::id::ActorId;
use crate::mailbox::{ActorRef, Lifecycle};
use crate::pump::{ChildExit, ExitReason};
use crate::registry::Registry;

// ---- messages ------------------------------------------------------------------------------

/// Starts a child that lives only as long as this supervisor instance (a pod worker); a
/// restarted supervisor does not bring it back.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StartChild(pub ChildSpec);

/// Stops a child for good and forgets it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopChild(pub ActorId);

/// Stops every child and then the supervisor itself, cleanly (not an escalation): how a
/// tree is taken down at process exit.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

// ---- configuration -------------------------------------------------------------------------

/// Which children restart when one crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Only the crashed child.
    OneForOne,
    /// Every child: for children that each hold part of one state.
    OneForAll,
    /// The crashed child and those started after it: later children depend on earlier ones.
    RestForOne,
}

#[derive(Debug, Clone, Copy)]
pub struct SupervisorConfig {
    pub strategy: Strategy,
    pub backoff: Backoff,
    pub intensity: Intensity,
    pub scope: Scope,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self {
            strategy: Strategy::OneForOne,
            backoff: Backoff::default(),
            intensity: Intensity::default(),
            scope: Scope::Group,
        }
    }
}

// ---- state ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Running,
    /// Asked to stop as part of a group restart; starts again with the group at `due`.
    StoppingForRestart {
        due: Instant,
    },
    /// Asked to stop for good.
    StoppingForGood,
    /// Down; starts again at `due`.
    Waiting {
        due: Instant,
    },
}

struct Slot {
    spec: ChildSpec,
    /// Start order, for rest-for-one and for starting a group in order.
    seq: u64,
    dynamic: bool,
    state: SlotState,
    instance: u64,
    started_at: Instant,
}

pub struct Supervisor {
    name: String,
    config: SupervisorConfig,
    registry: Arc<Registry>,
    static_children: Vec<ChildSpec>,
    me: Option<ActorRef<Supervisor>>,
    exits: Option<UnboundedSender<ChildExit>>,
    slots: BTreeMap<ActorId, Slot>,
    /// Children asked to start while one with their id was still stopping for good (a pod
    /// UID reused at once): each starts the moment its namesake is gone. Kept apart from
    /// the slots, which every child pays for.
    successors: HashMap<ActorId, ChildSpec>,
    tracker: RestartTracker,
    next_seq: u64,
    next_instance: u64,
    escalated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SupervisorSummary {
    pub strategy: Strategy,
    pub children: usize,
    pub restarting: usize,
}

impl Supervisor {
    /// A supervisor named `name` (its id is `supervisor/<name>`) for `children`, started
    /// in order.
    pub fn new(
        name: &str,
        config: SupervisorConfig,
        registry: Arc<Registry>,
        children: Vec<ChildSpec>,
    ) -> Self {
        Self {
            name: name.to_string(),
            config,
            registry,
            static_children: children,
            me: None,
            exits: None,
            slots: BTreeMap::new(),
            successors: HashMap::new(),
            tracker: RestartTracker::new(config.backoff, config.intensity, config.scope),
            next_seq: 0,
            next_instance: 0,
            escalated: false,
        }
    }

    /// A spec for running this supervisor under another one.
    pub fn spec(
        name: &str,
        config: SupervisorConfig,
        registry: Arc<Registry>,
        children: Vec<ChildSpec>,
    ) -> (ActorRef<Supervisor>, ChildSpec) {
        let name_owned = name.to_string();
        ChildSpec::of(move || {
            Supervisor::new(&name_owned, config, registry.clone(), children.clone())
        })
        .key(name)
        .build()
    }

    fn add_child(&mut self, spec: ChildSpec, dynamic: bool) {
        let id = spec.id().clone();
        if let Some(slot) = self.slots.get_mut(&id) {
            if slot.state == SlotState::StoppingForGood {
                self.successors.insert(id, spec);
            } else {
                warn!(supervisor = %self.name, child = %id, "child already supervised; ignoring");
            }
            return;
        }
        let parent = self.me.as_ref().map(|m| m.id().clone());
        spec.cell.reopen();
        self.registry.register(spec.cell.probe(), parent);
        self.next_seq += 1;
        let now = Instant::now();
        let slot = Slot {
            spec,
            seq: self.next_seq,
            dynamic,
            state: SlotState::Waiting { due: now },
            instance: 0,
            started_at: now,
        };
        self.slots.insert(id.clone(), slot);
        self.start(&id);
    }

    fn start(&mut self, id: &ActorId) {
        let Some(slot) = self.slots.get_mut(id) else {
            return;
        };
        self.next_instance += 1;
        slot.instance = self.next_instance;
        slot.state = SlotState::Running;
        slot.started_at = Instant::now();
        let arbiter = slot
            .spec
            .arbiter
            .clone()
            .unwrap_or_else(actix::Arbiter::current);
        slot.spec.cell.set_lifecycle(Lifecycle::Starting);
        slot.spec
            .cell
            .spawn(slot.instance, self.exits.clone(), &arbiter);
    }

    /// Forgets a child: its mailbox refuses further messages and it leaves the registry.
    fn remove(&mut self, id: &ActorId) {
        if let Some(slot) = self.slots.remove(id) {
            slot.spec.cell.close();
            self.registry.deregister(id);
            self.tracker.forget(id);
        }
    }

    /// Starts every waiting child whose backoff has passed, in start order, unless a group
    /// restart is still waiting for members to stop.
    fn start_due(&mut self) {
        let stopping = self
            .slots
            .values()
            .any(|s| matches!(s.state, SlotState::StoppingForRestart { .. }));
        if self.escalated || stopping {
            return;
        }
        let now = Instant::now();
        let mut due: Vec<(u64, ActorId)> = self
            .slots
            .iter()
            .filter(|(_, s)| matches!(s.state, SlotState::Waiting { due } if due <= now))
            .map(|(id, s)| (s.seq, id.clone()))
            .collect();
        due.sort();
        for (_, id) in due {
            self.start(&id);
        }
    }

    fn on_unexpected_exit(&mut self, id: &ActorId, reason: ExitReason, ctx: &mut Context<Self>) {
        let Some(slot) = self.slots.get(id) else {
            return;
        };
        let (seq, started_at) = (slot.seq, slot.started_at);
        let restart = match slot.spec.restart {
            Restart::Permanent => true,
            Restart::Transient => reason.is_failure(),
            Restart::Temporary => false,
        };
        match &reason {
            ExitReason::Panic(msg) => {
                error!(supervisor = %self.name, child = %id, panic = %msg, "child panicked")
            }
            ExitReason::Error(msg) => {
                warn!(supervisor = %self.name, child = %id, error = %msg, "child stopped on an error")
            }
            ExitReason::Normal => info!(supervisor = %self.name, child = %id, "child stopped"),
        }
        if !restart {
            self.remove(id);
            return;
        }
        slot.spec.cell.count_restart();
        match self.tracker.on_crash(id, started_at, Instant::now()) {
            Decision::Escalate { restarts, within } => {
                let why = format!(
                    "restart intensity exceeded: {restarts} restarts within {within:?}, last by {id} ({reason:?})"
                );
                self.escalate(why, ctx);
            }
            Decision::Hold { after, restarts } => {
                warn!(supervisor = %self.name, child = %id, restarts, after_ms = after.as_millis() as u64, "child crashes too often: holding it back alone");
                self.restart_later(id, seq, after, ctx);
            }
            Decision::Restart { after } => self.restart_later(id, seq, after, ctx),
        }
    }

    /// Restarts the crashed child `id` (and its group, by the strategy) after `after`.
    fn restart_later(&mut self, id: &ActorId, seq: u64, after: Duration, ctx: &mut Context<Self>) {
        // The group restarts together, in start order, once the crashed child's backoff
        // has passed; each member counts a restart.
        let due = Instant::now() + after;
        let strategy = self.config.strategy;
        for (other, s) in self.slots.iter_mut() {
            let in_group = match strategy {
                Strategy::OneForOne => false,
                Strategy::OneForAll => other != id,
                Strategy::RestForOne => s.seq > seq,
            };
            if in_group && s.state == SlotState::Running {
                s.state = SlotState::StoppingForRestart { due };
                s.spec.cell.count_restart();
                s.spec.cell.stop();
            }
        }
        if let Some(slot) = self.slots.get_mut(id) {
            slot.state = SlotState::Waiting { due };
            slot.spec.cell.set_lifecycle(Lifecycle::Restarting);
        }
        ctx.run_later(after, |act, _| act.start_due());
    }

    /// Gives up: stops every child for good and stops itself with an error, which its own
    /// supervisor sees as a crash.
    fn escalate(&mut self, why: String, ctx: &mut Context<Self>) {
        error!(supervisor = %self.name, reason = %why, "escalating");
        self.escalated = true;
        for slot in self.slots.values_mut() {
            if slot.state == SlotState::Running {
                slot.spec.cell.stop();
            }
            slot.state = SlotState::StoppingForGood;
        }
        match &self.me {
            Some(me) => me.fail(ctx, why),
            None => ctx.stop(),
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

impl SupervisedActor for Supervisor {
    const KIND: &'static str = "supervisor";
    type Summary = SupervisorSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.me = Some(start.me.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        self.exits = Some(tx);
        ctx.add_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        for spec in self.static_children.clone() {
            self.add_child(spec, false);
        }
    }

    fn summary(&self) -> SupervisorSummary {
        SupervisorSummary {
            strategy: self.config.strategy,
            children: self.slots.len(),
            restarting: self
                .slots
                .values()
                .filter(|s| s.state != SlotState::Running)
                .count(),
        }
    }
}
