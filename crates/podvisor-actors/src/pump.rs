//! The pump: an `ActorFuture` spawned into each instance's context that hands the
//! mailbox's messages to the actor, one at a time, and reports how the instance ended.
//!
//! It doubles as the crash detector. actix drops an actor's context, with all its spawned
//! items, while the thread is still unwinding from a panic in a handler, a timer or a
//! spawned future (see shared/ACTIX.md), so the pump's `Drop` can tell a crash
//! (`thread::panicking()`) from a clean stop, and collect the panic message captured by
//! `crate::panic_capture`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use actix::{ActorContext, ActorFuture, AsyncContext, Context};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

use crate::actor::{StartInfo, SupervisedActor};
use crate::id::ActorId;
use crate::mailbox::{ActorRef, Control, Counters, Lifecycle, Mailbox, Next};
use crate::panic_capture;

/// Messages handled per poll before yielding, so timers and spawned futures of a busy
/// actor still run.
const BUDGET: usize = 64;

/// Within a burst, one message in this many is timed.
const SAMPLE_EVERY: usize = 16;

/// How an instance ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    Normal,
    /// Stopped itself with [`ActorRef::fail`].
    Error(String),
    Panic(String),
}

impl ExitReason {
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Normal)
    }
}

/// Sent to the supervisor when an instance is gone.
#[derive(Debug, Clone)]
pub struct ChildExit {
    pub id: ActorId,
    pub instance: u64,
    pub reason: ExitReason,
}

pub(crate) struct Pump<A: SupervisedActor> {
    mailbox: Arc<Mailbox<A>>,
    exits: Option<UnboundedSender<ChildExit>>,
    instance: u64,
    restarts: u64,
    receiving: bool,
    started: bool,
    in_handler: bool,
    last_summary: Option<Arc<A::Summary>>,
}

impl<A: SupervisedActor> Pump<A> {
    pub fn new(
        mailbox: Arc<Mailbox<A>>,
        exits: Option<UnboundedSender<ChildExit>>,
        instance: u64,
        restarts: u64,
    ) -> Self {
        Self {
            mailbox,
            exits,
            instance,
            restarts,
            receiving: false,
            started: false,
            in_handler: false,
            last_summary: None,
        }
    }

    fn publish_summary(&mut self, act: &A) {
        if std::mem::size_of::<A::Summary>() == 0 {
            return;
        }
        let now = act.summary();
        if self.last_summary.as_deref() != Some(&now) {
            let now = Arc::new(now);
            self.mailbox.set_summary(Some(now.clone()));
            self.last_summary = Some(now);
        }
    }
}

impl<A: SupervisedActor> ActorFuture<A> for Pump<A> {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut A,
        ctx: &mut Context<A>,
        task: &mut TaskContext<'_>,
    ) -> Poll<()> {
        let this = self.get_mut();
        let _in_actor = panic_capture::InActor::enter();
        if !this.receiving {
            // The crashed predecessor's context may not be gone yet.
            if !this.mailbox.acquire(task.waker()) {
                return Poll::Pending;
            }
            this.receiving = true;
        }
        // Timers and spawned futures change state too: every wake-up of the actor polls
        // the pump, so the summary is never staler than the actor's last wake-up.
        if this.started {
            this.publish_summary(act);
        } else {
            this.started = true;
            this.mailbox.set_lifecycle(Lifecycle::Running);
            let start = StartInfo {
                me: ActorRef::new(this.mailbox.clone()),
                restarts: this.restarts,
            };
            act.rebuild(ctx, &start);
            this.publish_summary(act);
            if ctx.waiting() {
                return Poll::Pending;
            }
        }
        // Handling time: every message is timed while the actor keeps up (one message per
        // poll); within a burst, the first and then every `SAMPLE_EVERY`-th. A precise
        // clock read costs ~30 ns here, as much as the rest of a message's trip, and a
        // burst is when throughput matters. Counts are never sampled.
        for n in 0..BUDGET {
            if ctx.state().stopping() {
                return Poll::Pending;
            }
            match this.mailbox.next(task.waker()) {
                Next::Message(env) => {
                    this.in_handler = true;
                    if n % SAMPLE_EVERY == 0 {
                        let t0 = Instant::now();
                        env.deliver(act, ctx);
                        this.mailbox.handle_time.record(t0.elapsed());
                    } else {
                        env.deliver(act, ctx);
                    }
                    this.in_handler = false;
                    Counters::bump(&this.mailbox.counters.handled);
                    this.publish_summary(act);
                    if ctx.waiting() {
                        return Poll::Pending;
                    }
                }
                Next::Control(Control::Stop(instance)) if instance != this.instance => {}
                Next::Control(Control::Stop(_)) | Next::Closed => {
                    ctx.stop();
                    return Poll::Pending;
                }
                Next::Control(Control::Panic(reason)) => {
                    panic!("injected fault: {reason}");
                }
                Next::Empty => return Poll::Pending,
            }
        }
        task.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<A: SupervisedActor> Drop for Pump<A> {
    fn drop(&mut self) {
        let reason = if std::thread::panicking() {
            if self.in_handler {
                Counters::bump(&self.mailbox.counters.failed);
            }
            let msg = panic_capture::take();
            self.mailbox.record_panic(msg.clone());
            ExitReason::Panic(msg.unwrap_or_else(|| "panic".into()))
        } else if let Some(err) = self.mailbox.take_error() {
            ExitReason::Error(err)
        } else {
            ExitReason::Normal
        };
        // The state the summary described died with this instance.
        self.mailbox.set_summary(None);
        if self.receiving {
            self.mailbox.release();
        }
        if let Some(exits) = &self.exits {
            let _ = exits.send(ChildExit {
                id: self.mailbox.id().clone(),
                instance: self.instance,
                reason,
            });
        } else {
            // Nobody restarts an unsupervised actor: its mailbox is done.
            self.mailbox.close();
        }
    }
}
