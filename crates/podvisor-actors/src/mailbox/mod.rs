//! Observable, bounded mailboxes that outlive the actor instances reading them.
//!
//! actix gives no queue length and loses its mailbox when an actor dies, so podvisor
//! actors do not receive through actix's mailbox at all. Each has a [`Mailbox`]: a bounded
//! queue with its own counters, shared by every [`ActorRef`] to the actor and by its
//! supervisor. The running instance pulls from it through a pump spawned in its context
//! (the pump). When the instance crashes, the queue and counters stay; the next
//! instance continues with the messages that were waiting. Only the message being handled
//! at the crash is lost (its asker gets an error).
//!
//! The queue is a `VecDeque` behind a `Mutex` held only for a push or a pop, never while a
//! handler runs: it makes `queued` exact and the oldest message's age exact to the coarse
//! clock's resolution (`crate::clock`), and costs nothing for an idle actor (an empty
//! `VecDeque` does not allocate).

mod actor_ref;
mod envelope;
mod stats;

use std::collections::VecDeque;
use std::sync::atomic::{
    AtomicU8,
    Ordering::{Acquire, Relaxed},
};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

use actix::{Actor, Context};
use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

pub use actor_ref::{ActorRef, MailboxError, Recipient, SendError};
pub(crate) use envelope::{Envelope, MessageEnvelope, short_type_name};
pub(crate) use stats::Counters;
pub use stats::{Lifecycle, MailboxSnapshot};

use crate::histogram::{Histogram, HistogramSnapshot};
use crate::id::ActorId;

/// Capacity of a mailbox unless its spec says otherwise.
pub const DEFAULT_CAPACITY: usize = 1024;

/// Requests from the supervisor (or a test) that bypass the queue and its capacity.
#[derive(Debug, Clone)]
pub(crate) enum Control {
    /// Addressed to one instance, so a stop meant for a crashed predecessor never stops
    /// its successor.
    Stop(u64),
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    Panic(String),
}

struct Queued<A: Actor<Context = Context<A>>> {
    /// Coarse monotonic milliseconds (`crate::clock`).
    at_ms: u64,
    env: Box<dyn Envelope<A>>,
}

struct Queue<A: Actor<Context = Context<A>>> {
    items: VecDeque<Queued<A>>,
    control: VecDeque<Control>,
    /// An instance's pump holds the receiving side; a successor waits until it is free.
    receiving: bool,
    closed: bool,
    last_message: Option<&'static str>,
    last_panic: Option<String>,
    /// Why the current instance asked to stop, if it stopped on an error.
    error: Option<String>,
    summary: Option<Summary>,
}

pub(crate) struct Mailbox<A: Actor<Context = Context<A>>> {
    id: ActorId,
    kind: &'static str,
    capacity: usize,
    queue: Mutex<Queue<A>>,
    receiver: AtomicWaker,
    space: Notify,
    lifecycle: AtomicU8,
    pub counters: Counters,
    pub handle_time: Histogram,
}

/// An actor's published state summary. It is kept as the value the actor built and
/// serialised only when someone reads it: publishing is on every handled message, reading
/// is when an operator looks.
pub(crate) type Summary = Arc<dyn ErasedSummary>;

/// A summary of any serialisable type, behind one pointer type.
pub(crate) trait ErasedSummary: Send + Sync {
    fn to_json(&self) -> Option<serde_json::Value>;
}

impl<T: serde::Serialize + Send + Sync> ErasedSummary for T {
    fn to_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
}

pub(crate) enum Next<A: Actor<Context = Context<A>>> {
    Control(Control),
    Message(Box<dyn Envelope<A>>),
    Empty,
    Closed,
}

impl<A: Actor<Context = Context<A>>> Mailbox<A> {
    pub fn new(id: ActorId, kind: &'static str, capacity: usize) -> Self {
        Self {
            id,
            kind,
            capacity: capacity.max(1),
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                control: VecDeque::new(),
                receiving: false,
                closed: false,
                last_message: None,
                last_panic: None,
                error: None,
                summary: None,
            }),
            receiver: AtomicWaker::new(),
            space: Notify::new(),
            lifecycle: AtomicU8::new(Lifecycle::Starting as u8),
            counters: Counters::default(),
            handle_time: Histogram::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<A>> {
        // The lock is never held while user code runs, so poisoning can only come from a
        // bug in this module; the data stays consistent either way.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn id(&self) -> &ActorId {
        &self.id
    }

    /// Enqueues unless full or closed; on refusal gives the envelope back, with `true`
    /// if the mailbox is closed. Refusals are counted by the caller, which knows whether
    /// it gives up (`try_send`) or waits for room (`send`).
    pub fn push<E: Envelope<A> + 'static>(&self, env: Box<E>) -> Result<(), (Box<E>, bool)> {
        let at_ms = crate::clock::coarse_now_ms();
        let was_empty = {
            let mut q = self.lock();
            if q.closed || q.items.len() >= self.capacity {
                return Err((env, q.closed));
            }
            // Counted before the message can be popped, so no reader sees it handled
            // before it was sent.
            Counters::bump(&self.counters.sent);
            q.items.push_back(Queued { at_ms, env });
            q.items.len() == 1
        };
        // The pump registers its waker only when it finds the queue empty; while messages
        // are waiting it is running or already woken.
        if was_empty {
            self.receiver.wake();
        }
        Ok(())
    }

    /// Waits until there is room (or the mailbox closed).
    pub async fn wait_for_space(&self) {
        let notified = self.space.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let q = self.lock();
            if q.closed || q.items.len() < self.capacity {
                return;
            }
        }
        notified.await;
    }

    pub fn control(&self, c: Control) {
        self.lock().control.push_back(c);
        self.receiver.wake();
    }

    /// Claims the receiving side for a new instance. `false`: the previous instance still
    /// holds it; `waker` is woken when it lets go.
    pub fn acquire(&self, waker: &Waker) -> bool {
        self.receiver.register(waker);
        let mut q = self.lock();
        if q.receiving {
            return false;
        }
        q.receiving = true;
        true
    }

    pub fn release(&self) {
        self.lock().receiving = false;
        self.receiver.wake();
    }

    /// The next control request or message, or `Empty` with `waker` registered.
    pub fn next(&self, waker: &Waker) -> Next<A> {
        if let Some(n) = self.try_next() {
            return n;
        }
        self.receiver.register(waker);
        self.try_next().unwrap_or(Next::Empty)
    }

    fn try_next(&self) -> Option<Next<A>> {
        let mut q = self.lock();
        if let Some(c) = q.control.pop_front() {
            return Some(Next::Control(c));
        }
        if q.closed {
            return Some(Next::Closed);
        }
        let was_full = q.items.len() >= self.capacity;
        let item = q.items.pop_front()?;
        q.last_message = Some(item.env.type_name());
        drop(q);
        if was_full {
            self.space.notify_one();
        }
        Some(Next::Message(item.env))
    }

    /// Stops for good: queued messages are dropped (and counted), waiting senders are
    /// released, later sends are refused.
    pub fn close(&self) {
        let dropped = {
            let mut q = self.lock();
            q.closed = true;
            std::mem::take(&mut q.items)
        };
        self.counters
            .dropped
            .fetch_add(dropped.len() as u64, Relaxed);
        drop(dropped);
        self.set_lifecycle(Lifecycle::Stopped);
        self.space.notify_waiters();
        self.receiver.wake();
    }

    /// Accepts messages again: a supervisor starting a child whose mailbox an earlier
    /// instance of that supervisor closed.
    pub fn reopen(&self) {
        self.lock().closed = false;
    }

    pub fn set_lifecycle(&self, l: Lifecycle) {
        self.lifecycle.store(l as u8, Relaxed);
    }

    pub fn lifecycle(&self) -> Lifecycle {
        match self.lifecycle.load(Relaxed) {
            0 => Lifecycle::Starting,
            1 => Lifecycle::Running,
            2 => Lifecycle::Restarting,
            _ => Lifecycle::Stopped,
        }
    }

    pub fn record_panic(&self, msg: Option<String>) {
        self.lock().last_panic = Some(msg.unwrap_or_else(|| "panic (message unavailable)".into()));
    }

    pub fn set_error(&self, reason: String) {
        self.lock().error = Some(reason);
    }

    pub fn take_error(&self) -> Option<String> {
        self.lock().error.take()
    }

    /// `None`: the instance that published the summary is gone.
    pub fn set_summary(&self, summary: Option<Summary>) {
        self.lock().summary = summary;
    }

    pub fn snapshot(&self) -> MailboxSnapshot {
        let now_ms = crate::clock::coarse_now_ms();
        let (queued, oldest_ms, last_message, last_panic) = {
            let q = self.lock();
            let oldest = q.items.front().map(|i| now_ms.saturating_sub(i.at_ms));
            (q.items.len(), oldest, q.last_message, q.last_panic.clone())
        };
        let c = &self.counters;
        // What happened to messages is read before how many were sent: a snapshot taken
        // under load may count a message as sent and not yet handled, never the reverse.
        let handled = c.handled.load(Acquire);
        let (failed, dropped) = (c.failed.load(Acquire), c.dropped.load(Acquire));
        MailboxSnapshot {
            capacity: self.capacity,
            sent: c.sent.load(Acquire),
            handled,
            queued,
            oldest_queued_ms: oldest_ms.unwrap_or(0) as f64,
            rejected: c.rejected.load(Relaxed),
            failed,
            dropped,
            last_message: last_message.map(short_type_name),
            handle_time: self.handle_time.snapshot().summary(),
            restarts: c.restarts.load(Relaxed),
            last_panic,
            lifecycle: self.lifecycle(),
        }
    }
}

/// A mailbox seen from outside its actor type: what the registry and the debug endpoint
/// read.
pub trait Probe: Send + Sync {
    fn id(&self) -> &ActorId;
    fn kind(&self) -> &'static str;
    fn snapshot(&self) -> MailboxSnapshot;
    fn handle_time(&self) -> HistogramSnapshot;
    /// The actor's own state summary, as it last published it.
    fn summary(&self) -> Option<serde_json::Value>;
    /// Makes the running instance panic (tests only).
    #[cfg(feature = "fault-injection")]
    fn inject_panic(&self, reason: &str);
}

impl<A: Actor<Context = Context<A>>> Probe for Mailbox<A> {
    fn id(&self) -> &ActorId {
        &self.id
    }

    fn kind(&self) -> &'static str {
        self.kind
    }

    fn snapshot(&self) -> MailboxSnapshot {
        Mailbox::snapshot(self)
    }

    fn handle_time(&self) -> HistogramSnapshot {
        self.handle_time.snapshot()
    }

    fn summary(&self) -> Option<serde_json::Value> {
        // Cloned under the lock, serialised outside it.
        let summary = self.lock().summary.clone()?;
        summary.to_json()
    }

    #[cfg(feature = "fault-injection")]
    fn inject_panic(&self, reason: &str) {
        self.control(Control::Panic(reason.to_string()));
    }
}
