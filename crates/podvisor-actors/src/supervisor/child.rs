//! Child specifications: how a supervisor makes, starts and stops one child, whatever its
//! actor type. The spec owns the child's mailbox, so the `ActorRef` handed out when the
//! spec is built stays valid across every restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use actix::{ArbiterHandle, AsyncContext};
use tokio::sync::mpsc::UnboundedSender;

use crate::actor::SupervisedActor;
use crate::id::ActorId;
use crate::mailbox::{ActorRef, Control, DEFAULT_CAPACITY, Lifecycle, Mailbox, Probe};
use crate::pump::{ChildExit, Pump};

/// When a supervisor restarts a child (OTP's restart types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Always: the child should never stop (core actors).
    Permanent,
    /// Only after a crash or an error stop: a clean stop means its work is done (pod
    /// workers of finished pods).
    Transient,
    /// Never.
    Temporary,
}

pub(crate) trait ChildCell: Send + Sync {
    fn id(&self) -> &ActorId;
    fn probe(&self) -> Arc<dyn Probe>;
    fn spawn(
        &self,
        instance: u64,
        exits: Option<UnboundedSender<ChildExit>>,
        arbiter: &ArbiterHandle,
    );
    /// Asks the running instance to stop (it reports a normal exit).
    fn stop(&self);
    /// Refuses all further messages; nothing will start again.
    fn close(&self);
    fn reopen(&self);
    fn set_lifecycle(&self, l: Lifecycle);
    fn count_restart(&self);
}

struct Cell<A: SupervisedActor> {
    mailbox: Arc<Mailbox<A>>,
    make: Arc<dyn Fn() -> A + Send + Sync>,
    instance: AtomicU64,
}

impl<A: SupervisedActor> ChildCell for Cell<A> {
    fn id(&self) -> &ActorId {
        self.mailbox.id()
    }

    fn probe(&self) -> Arc<dyn Probe> {
        self.mailbox.clone()
    }

    fn spawn(
        &self,
        instance: u64,
        exits: Option<UnboundedSender<ChildExit>>,
        arbiter: &ArbiterHandle,
    ) {
        self.instance.store(instance, Relaxed);
        let restarts = self.mailbox.counters.restarts.load(Relaxed);
        let (mailbox, make) = (self.mailbox.clone(), self.make.clone());
        A::start_in_arbiter(arbiter, move |ctx| {
            ctx.spawn(Pump::new(mailbox, exits, instance, restarts));
            make()
        });
    }

    fn stop(&self) {
        self.mailbox
            .control(Control::Stop(self.instance.load(Relaxed)));
    }

    fn close(&self) {
        self.mailbox.close();
    }

    fn reopen(&self) {
        self.mailbox.reopen();
    }

    fn set_lifecycle(&self, l: Lifecycle) {
        self.mailbox.set_lifecycle(l);
    }

    fn count_restart(&self) {
        self.mailbox.counters.restarts.fetch_add(1, Relaxed);
    }
}

/// A child a supervisor can (re)start. Cheap to clone.
#[derive(Clone)]
pub struct ChildSpec {
    pub(crate) cell: Arc<dyn ChildCell>,
    pub(crate) restart: Restart,
    pub(crate) arbiter: Option<ArbiterHandle>,
}

impl std::fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", self.cell.id())
            .field("restart", &self.restart)
            .finish()
    }
}

impl ChildSpec {
    /// Starts describing a child made by `make` (called for every start, so every
    /// instance begins from a clean state).
    pub fn of<A: SupervisedActor>(make: impl Fn() -> A + Send + Sync + 'static) -> ChildBuilder<A> {
        ChildBuilder {
            key: None,
            capacity: DEFAULT_CAPACITY,
            restart: Restart::Permanent,
            arbiter: None,
            make: Arc::new(make),
        }
    }

    pub fn id(&self) -> &ActorId {
        self.cell.id()
    }
}

pub struct ChildBuilder<A: SupervisedActor> {
    key: Option<String>,
    capacity: usize,
    restart: Restart,
    arbiter: Option<ArbiterHandle>,
    make: Arc<dyn Fn() -> A + Send + Sync>,
}

impl<A: SupervisedActor> ChildBuilder<A> {
    /// Distinguishes actors of one kind (a pod UID); the id becomes `kind/key`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Runs the child on this arbiter (thread) instead of its supervisor's.
    pub fn arbiter(mut self, arbiter: ArbiterHandle) -> Self {
        self.arbiter = Some(arbiter);
        self
    }

    pub fn build(self) -> (ActorRef<A>, ChildSpec) {
        let id = ActorId::new(A::KIND, self.key.as_deref());
        let mailbox = Arc::new(Mailbox::new(id, A::KIND, self.capacity));
        let cell = Cell {
            mailbox: mailbox.clone(),
            make: self.make,
            instance: AtomicU64::new(0),
        };
        (
            ActorRef::new(mailbox),
            ChildSpec {
                cell: Arc::new(cell),
                restart: self.restart,
                arbiter: self.arbiter,
            },
        )
    }

    /// Starts the actor on the current arbiter with no supervisor: if it crashes it stays
    /// down and its mailbox refuses further messages. For benchmarks and tests.
    pub fn start_unsupervised(self) -> ActorRef<A> {
        crate::panic_capture::install();
        let arbiter = self.arbiter.clone().unwrap_or_else(actix::Arbiter::current);
        let (me, spec) = self.build();
        spec.cell.spawn(1, None, &arbiter);
        me
    }
}
