//! What every podvisor actor implements on top of actix's `Actor`.

use actix::{Actor, Context};
use serde::Serialize;

use crate::mailbox::ActorRef;

/// An actor that runs under a podvisor supervisor.
///
/// A restarted actor is a *new* value made by its factory: nothing of the crashed
/// instance survives except its mailbox (queued messages, counters). `rebuild` is where
/// it reads the current truth (desired state, a runtime relist) instead of remembering.
pub trait SupervisedActor: Actor<Context = Context<Self>> {
    /// Shown in the registry and in metrics, e.g. `"pod-worker"`.
    const KIND: &'static str;

    /// The small state summary shown next to the mailbox in the debug endpoint. Must never
    /// hold secrets or message payloads: phases, counts, timestamps.
    type Summary: Serialize + PartialEq + Send + Sync + Unpin + 'static;

    /// Runs at every start, first or after a crash, before any message is handled. Work
    /// that must finish before messages are handled goes in `ctx.wait(..)`.
    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>);

    /// Read after `rebuild` and after every handled message; published when it changed.
    fn summary(&self) -> Self::Summary;
}

/// Has the actor's summary published now, for state that a spawned future's completion
/// or a stream item changed. The mailbox publishes after each message and whenever the
/// actor is polled, but actix polls it before such items, so what they change would show
/// only at the next wake-up. Spawning an empty item makes the context poll its items (the
/// mailbox's first) once more.
pub fn publish_now<A: SupervisedActor>(ctx: &mut Context<A>) {
    use actix::AsyncContext;
    ctx.spawn(actix::fut::ready(()));
}

/// What an instance learns when it starts.
pub struct StartInfo<A: SupervisedActor> {
    /// The actor's own handle (it survives restarts: hand it out freely).
    pub me: ActorRef<A>,
    /// How many times this actor has been restarted before this start.
    pub restarts: u64,
}

impl<A: SupervisedActor> StartInfo<A> {
    pub fn is_restart(&self) -> bool {
        self.restarts > 0
    }
}
