//! The supervisor: an actor that starts its children, restarts them when they crash (with
//! backoff), and gives up, stopping them all and escalating to its own supervisor, when
//! crashes come faster than the restart intensity allows. At the root, escalation ends
//! the process with a non-zero exit so the service manager restarts it, and level-driven
//! start-up adopts whatever is running.

mod child;
pub mod policy;
mod root;

use std::sync::Arc;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Message, StreamHandler};
use serde::Serialize;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::time::Instant;
use tracing::{error, info, warn};

pub use child::{ChildBuilder, ChildSpec, Restart};
pub use policy::{Backoff, Decision, Intensity, RestartTracker};
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
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self {
            strategy: Strategy::OneForOne,
            backoff: Backoff::default(),
            intensity: Intensity::default(),
        }
    }
}

// ---- state ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Running,
    /// Asked to stop as part of a group restart; starts again with the group.
    StoppingForRestart,
    /// Asked to stop for good.
    StoppingForGood,
    /// Down; starts again at `due`.
    Waiting {
        due: Instant,
    },
}

struct Slot {
    spec: ChildSpec,
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
    slots: Vec<Slot>,
    tracker: RestartTracker,
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
            slots: Vec::new(),
            tracker: RestartTracker::new(config.backoff, config.intensity),
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

    fn slot(&self, id: &ActorId) -> Option<usize> {
        self.slots.iter().position(|s| s.spec.id() == id)
    }

    fn add_child(&mut self, spec: ChildSpec, dynamic: bool, ctx: &mut Context<Self>) {
        if let Some(i) = self.slot(spec.id()) {
            warn!(supervisor = %self.name, child = %spec.id(), "child already supervised; ignoring");
            let _ = i;
            return;
        }
        let parent = self.me.as_ref().map(|m| m.id().clone());
        spec.cell.reopen();
        self.registry
            .register(spec.cell.probe(), spec.cell.key().map(String::from), parent);
        self.slots.push(Slot {
            spec,
            dynamic,
            state: SlotState::Waiting {
                due: Instant::now(),
            },
            instance: 0,
            started_at: Instant::now(),
        });
        let i = self.slots.len() - 1;
        self.start(i, ctx);
    }

    fn start(&mut self, i: usize, _ctx: &mut Context<Self>) {
        self.next_instance += 1;
        let slot = &mut self.slots[i];
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

    /// Forgets slot `i`: its mailbox refuses further messages and it leaves the registry.
    fn remove(&mut self, i: usize) {
        let slot = self.slots.remove(i);
        slot.spec.cell.close();
        self.registry.deregister(slot.spec.id());
        self.tracker.forget(slot.spec.id());
    }

    /// Starts every waiting child whose backoff has passed, unless a group restart is
    /// still waiting for members to stop.
    fn start_due(&mut self, ctx: &mut Context<Self>) {
        if self.escalated
            || self
                .slots
                .iter()
                .any(|s| s.state == SlotState::StoppingForRestart)
        {
            return;
        }
        let now = Instant::now();
        for i in 0..self.slots.len() {
            if let SlotState::Waiting { due } = self.slots[i].state {
                if due <= now {
                    self.start(i, ctx);
                }
            }
        }
    }

    fn schedule(&mut self, i: usize, after: std::time::Duration, ctx: &mut Context<Self>) {
        self.slots[i].state = SlotState::Waiting {
            due: Instant::now() + after,
        };
        self.slots[i].spec.cell.set_lifecycle(Lifecycle::Restarting);
        ctx.run_later(after, |act, ctx| act.start_due(ctx));
    }

    fn on_unexpected_exit(&mut self, i: usize, reason: ExitReason, ctx: &mut Context<Self>) {
        let id = self.slots[i].spec.id().clone();
        let restart = match self.slots[i].spec.restart {
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
            self.remove(i);
            return;
        }
        self.slots[i].spec.cell.count_restart();
        match self
            .tracker
            .on_crash(&id, self.slots[i].started_at, Instant::now())
        {
            Decision::Escalate { restarts, within } => {
                let why = format!(
                    "restart intensity exceeded: {restarts} restarts within {within:?}, last by {id} ({reason:?})"
                );
                self.escalate(why, ctx);
            }
            Decision::Restart { after } => {
                let group: Vec<usize> = match self.config.strategy {
                    Strategy::OneForOne => Vec::new(),
                    Strategy::OneForAll => (0..self.slots.len()).filter(|&j| j != i).collect(),
                    Strategy::RestForOne => (i + 1..self.slots.len()).collect(),
                };
                for j in group {
                    if self.slots[j].state == SlotState::Running {
                        self.slots[j].state = SlotState::StoppingForRestart;
                        self.slots[j].spec.cell.stop();
                    }
                }
                self.schedule(i, after, ctx);
            }
        }
    }

    /// Gives up: stops every child for good and stops itself with an error, which its own
    /// supervisor sees as a crash.
    fn escalate(&mut self, why: String, ctx: &mut Context<Self>) {
        error!(supervisor = %self.name, reason = %why, "escalating");
        self.escalated = true;
        for slot in &mut self.slots {
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
            self.add_child(spec, false, ctx);
        }
    }

    fn summary(&self) -> SupervisorSummary {
        SupervisorSummary {
            strategy: self.config.strategy,
            children: self.slots.len(),
            restarting: self
                .slots
                .iter()
                .filter(|s| s.state != SlotState::Running)
                .count(),
        }
    }
}

impl StreamHandler<ChildExit> for Supervisor {
    fn handle(&mut self, exit: ChildExit, ctx: &mut Context<Self>) {
        let Some(i) = self.slot(&exit.id) else { return };
        if self.slots[i].instance != exit.instance {
            return; // a predecessor's late report
        }
        match self.slots[i].state {
            SlotState::StoppingForGood => self.remove(i),
            SlotState::StoppingForRestart => {
                self.slots[i].state = SlotState::Waiting {
                    due: Instant::now(),
                };
                self.slots[i].spec.cell.set_lifecycle(Lifecycle::Restarting);
                self.start_due(ctx);
            }
            SlotState::Running => self.on_unexpected_exit(i, exit.reason, ctx),
            SlotState::Waiting { .. } => {}
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // The supervisor holds a sender itself, so the stream never ends while it lives.
    }
}

impl Handler<StartChild> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: StartChild, ctx: &mut Context<Self>) {
        if !self.escalated {
            self.add_child(msg.0, true, ctx);
        }
    }
}

impl Handler<StopChild> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: StopChild, _ctx: &mut Context<Self>) {
        let Some(i) = self.slot(&msg.0) else { return };
        match self.slots[i].state {
            SlotState::Running | SlotState::StoppingForRestart => {
                self.slots[i].spec.cell.stop();
                self.slots[i].state = SlotState::StoppingForGood;
            }
            SlotState::Waiting { .. } => self.remove(i),
            SlotState::StoppingForGood => {}
        }
    }
}

impl Drop for Supervisor {
    /// Whether it crashed, escalated or was stopped, a supervisor's children go with it.
    /// After a crash its successor starts the static children again on the same
    /// mailboxes, so those stay open (queued messages wait for the new instances); a clean
    /// stop or an escalation closes them all, so senders learn the actors are gone.
    /// Dynamic children belonged to this instance alone and are always closed.
    fn drop(&mut self) {
        let crashed = std::thread::panicking();
        for slot in &self.slots {
            slot.spec.cell.stop();
            if slot.dynamic || !crashed {
                slot.spec.cell.close();
            }
            self.registry.deregister(slot.spec.id());
        }
    }
}
