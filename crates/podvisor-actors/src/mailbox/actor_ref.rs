//! The handles podvisor actors hand out. [`ActorRef`] names one actor type;
//! [`Recipient`] names only a message type, which is what actors should hold of each other
//! (the PLEG holds a `Recipient<PodLifecycleEvent>`, not the sync loop's address), so
//! tests can stand in a probe for any peer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message};
use tracing::debug;

use super::{Counters, Mailbox, MessageEnvelope};

use crate::id::ActorId;

/// A refused `try_send`: the message comes back.
#[derive(thiserror::Error)]
pub enum SendError<M> {
    #[error("mailbox full")]
    Full(M),
    #[error("actor stopped")]
    Closed(M),
}

impl<M> std::fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<M> SendError<M> {
    pub fn into_inner(self) -> M {
        match self {
            Self::Full(m) | Self::Closed(m) => m,
        }
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MailboxError {
    #[error("actor stopped")]
    Closed,
    /// The actor crashed (or stopped) while the request was queued or being handled.
    #[error("actor failed before answering")]
    NoAnswer,
}

pub struct ActorRef<A: Actor<Context = Context<A>>> {
    mailbox: Arc<Mailbox<A>>,
}

impl<A: Actor<Context = Context<A>>> Clone for ActorRef<A> {
    fn clone(&self) -> Self {
        Self {
            mailbox: self.mailbox.clone(),
        }
    }
}

impl<A: Actor<Context = Context<A>>> std::fmt::Debug for ActorRef<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActorRef({})", self.mailbox.id())
    }
}

impl<A: Actor<Context = Context<A>>> ActorRef<A> {
    pub(crate) fn new(mailbox: Arc<Mailbox<A>>) -> Self {
        Self { mailbox }
    }

    pub fn id(&self) -> &ActorId {
        self.mailbox.id()
    }

    /// Publishes a state summary for this actor on its behalf, for an owner that holds the
    /// actor's state (the pod-workers dispatcher, for each pod worker). Only for actors
    /// whose own `Summary` is `()`, or the two would overwrite each other. The value is
    /// serialised only when the debug endpoint reads it.
    pub fn annotate(&self, summary: impl serde::Serialize + Send + Sync + 'static) {
        self.mailbox.set_summary(Some(Arc::new(summary)));
    }

    /// The mailbox's counters right now.
    pub fn mailbox_snapshot(&self) -> super::MailboxSnapshot {
        self.mailbox.snapshot()
    }

    /// Queues `msg` unless the mailbox is full or the actor stopped for good. While the
    /// actor restarts, messages are queued for the next instance.
    pub fn try_send<M>(&self, msg: M) -> Result<(), SendError<M>>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        self.mailbox
            .push(Box::new(MessageEnvelope::new(msg, None)))
            .map_err(|(env, closed)| {
                Counters::bump(&self.mailbox.counters.rejected);
                let msg = env.into_message();
                if closed {
                    SendError::Closed(msg)
                } else {
                    SendError::Full(msg)
                }
            })
    }

    /// Fire and forget. A refused message is counted in the mailbox's `rejected` and
    /// logged; use it for level-driven nudges ("look at X"), where a later one supersedes.
    pub fn do_send<M>(&self, msg: M)
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        if let Err(e) = self.mailbox.push(Box::new(MessageEnvelope::new(msg, None))) {
            Counters::bump(&self.mailbox.counters.rejected);
            debug!(
                actor = %self.id(),
                message = std::any::type_name::<M>(),
                closed = e.1,
                "message refused"
            );
        }
    }

    /// Queues `msg` (waiting for room if the mailbox is full) and waits for the answer.
    pub fn send<M>(
        &self,
        msg: M,
    ) -> impl Future<Output = Result<M::Result, MailboxError>> + use<A, M>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        let mailbox = self.mailbox.clone();
        async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let mut env = Box::new(MessageEnvelope::new(msg, Some(tx)));
            loop {
                match mailbox.push(env) {
                    Ok(()) => break,
                    Err((_, true)) => {
                        Counters::bump(&mailbox.counters.rejected);
                        return Err(MailboxError::Closed);
                    }
                    Err((back, false)) => {
                        env = back;
                        mailbox.wait_for_space().await;
                    }
                }
            }
            rx.await.map_err(|_| MailboxError::NoAnswer)
        }
    }

    pub fn recipient<M>(&self) -> Recipient<M>
    where
        A: Handler<M>,
        M: Message + Send + 'static,
        M::Result: Send,
    {
        Recipient {
            inner: Arc::new(self.clone()),
        }
    }

    /// Stops the current instance with an error, which its supervisor treats like a crash
    /// (restart with backoff). For an actor that finds itself unable to go on.
    pub fn fail(&self, ctx: &mut Context<A>, reason: impl Into<String>) {
        use actix::ActorContext;
        self.mailbox.set_error(reason.into());
        ctx.stop();
    }
}

trait Sender<M: Message>: Send + Sync {
    fn try_send(&self, msg: M) -> Result<(), SendError<M>>;
    fn do_send(&self, msg: M);
    fn send(&self, msg: M)
    -> Pin<Box<dyn Future<Output = Result<M::Result, MailboxError>> + Send>>;
    fn id(&self) -> &ActorId;
}

impl<A, M> Sender<M> for ActorRef<A>
where
    A: Actor<Context = Context<A>> + Handler<M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn try_send(&self, msg: M) -> Result<(), SendError<M>> {
        ActorRef::try_send(self, msg)
    }
    fn do_send(&self, msg: M) {
        ActorRef::do_send(self, msg)
    }
    fn send(
        &self,
        msg: M,
    ) -> Pin<Box<dyn Future<Output = Result<M::Result, MailboxError>> + Send>> {
        Box::pin(ActorRef::send(self, msg))
    }
    fn id(&self) -> &ActorId {
        ActorRef::id(self)
    }
}

/// A handle that can deliver `M` to some actor, whichever type it is.
pub struct Recipient<M: Message> {
    inner: Arc<dyn Sender<M>>,
}

impl<M: Message> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<M: Message> std::fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Recipient({})", self.inner.id())
    }
}

impl<M: Message + Send + 'static> Recipient<M>
where
    M::Result: Send,
{
    pub fn try_send(&self, msg: M) -> Result<(), SendError<M>> {
        self.inner.try_send(msg)
    }

    pub fn do_send(&self, msg: M) {
        self.inner.do_send(msg)
    }

    pub fn send(&self, msg: M) -> impl Future<Output = Result<M::Result, MailboxError>> + use<M> {
        self.inner.send(msg)
    }

    pub fn id(&self) -> &ActorId {
        self.inner.id()
    }
}
