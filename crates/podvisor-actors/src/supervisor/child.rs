//! Child specifications: how a supervisor makes, starts and stops one child, whatever its
//! actor type. The spec owns the child's mailbox, so the `ActorRef` handed out when the
//! spec is built stays valid across every restart.
//!
//! A child's address can exist before its factory ([`ChildSpec::reserve`]): actors that
//! name each other (the sync loop and the pod workers, the status manager and the status
//! writer) each get the other's address first, and the factories are bound once every
//! address is known, before anything starts.

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
    make: Make<A>,
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
        ChildBuilder::new(Arc::new(make))
    }

    /// Starts describing a child whose factory comes later: [`ChildBuilder::open`] gives
    /// its address at once and a [`Reserved`] to bind the factory to.
    pub fn reserve<A: SupervisedActor>() -> ChildBuilder<A, ()> {
        ChildBuilder::new(())
    }

    pub fn id(&self) -> &ActorId {
        self.cell.id()
    }
}

/// How a child is made.
type Make<A> = Arc<dyn Fn() -> A + Send + Sync>;

/// A child being described: `M` is its factory, or `()` until it has one.
pub struct ChildBuilder<A: SupervisedActor, M = Make<A>> {
    key: Option<String>,
    capacity: usize,
    restart: Restart,
    arbiter: Option<ArbiterHandle>,
    make: M,
    kind: std::marker::PhantomData<fn() -> A>,
}

/// A child's mailbox, addressable, waiting for its factory.
pub struct Reserved<A: SupervisedActor> {
    mailbox: Arc<Mailbox<A>>,
    restart: Restart,
    arbiter: Option<ArbiterHandle>,
}

impl<A: SupervisedActor> Reserved<A> {
    /// The child, made by `make` at each start.
    pub fn with(self, make: impl Fn() -> A + Send + Sync + 'static) -> ChildSpec {
        spec(self.mailbox, Arc::new(make), self.restart, self.arbiter)
    }
}

fn spec<A: SupervisedActor>(
    mailbox: Arc<Mailbox<A>>,
    make: Make<A>,
    restart: Restart,
    arbiter: Option<ArbiterHandle>,
) -> ChildSpec {
    let cell = Cell {
        mailbox,
        make,
        instance: AtomicU64::new(0),
    };
    ChildSpec {
        cell: Arc::new(cell),
        restart,
        arbiter,
    }
}

impl<A: SupervisedActor, M> ChildBuilder<A, M> {
    fn new(make: M) -> Self {
        Self {
            key: None,
            capacity: DEFAULT_CAPACITY,
            restart: Restart::Permanent,
            arbiter: None,
            make,
            kind: std::marker::PhantomData,
        }
    }

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

    fn mailbox(&self) -> Arc<Mailbox<A>> {
        let id = ActorId::new(A::KIND, self.key.as_deref());
        Arc::new(Mailbox::new(id, A::KIND, self.capacity))
    }
}

impl<A: SupervisedActor> ChildBuilder<A, ()> {
    /// The child's address now; its factory later ([`Reserved::with`]).
    pub fn open(self) -> (ActorRef<A>, Reserved<A>) {
        let mailbox = self.mailbox();
        let reserved = Reserved {
            mailbox: mailbox.clone(),
            restart: self.restart,
            arbiter: self.arbiter,
        };
        (ActorRef::new(mailbox), reserved)
    }
}

impl<A: SupervisedActor> ChildBuilder<A> {
    pub fn build(self) -> (ActorRef<A>, ChildSpec) {
        let mailbox = self.mailbox();
        let me = ActorRef::new(mailbox.clone());
        (me, spec(mailbox, self.make, self.restart, self.arbiter))
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
