//! Type-erased messages: a mailbox of actor `A` holds messages of every type `A` handles.
//! The envelope is built where the message type is known (at the send), so delivering it
//! needs nothing but the actor.

use actix::dev::{MessageResponse, OneshotSender};
use actix::{Actor, Context, Handler, Message};

pub(crate) trait Envelope<A: Actor<Context = Context<A>>>: Send {
    fn type_name(&self) -> &'static str;
    fn deliver(self: Box<Self>, act: &mut A, ctx: &mut Context<A>);
}

pub(crate) struct MessageEnvelope<M: Message> {
    msg: M,
    reply: Option<OneshotSender<M::Result>>,
}

impl<M: Message> MessageEnvelope<M> {
    pub fn new(msg: M, reply: Option<OneshotSender<M::Result>>) -> Self {
        Self { msg, reply }
    }

    pub fn into_message(self) -> M {
        self.msg
    }
}

impl<A, M> Envelope<A> for MessageEnvelope<M>
where
    A: Actor<Context = Context<A>> + Handler<M>,
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn type_name(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn deliver(self: Box<Self>, act: &mut A, ctx: &mut Context<A>) {
        // Like actix: a request whose asker has gone away is not worth handling.
        if self.reply.as_ref().is_some_and(|tx| tx.is_closed()) {
            return;
        }
        let response = <A as Handler<M>>::handle(act, self.msg, ctx);
        response.handle(ctx, self.reply);
    }
}

/// `podvisor_kubelet::pleg::Relist` → `pleg::Relist`: enough to recognise the message
/// without the crate path noise. Done when a snapshot is read, not per message.
pub(crate) fn short_type_name(full: &'static str) -> &'static str {
    let base = full.split('<').next().unwrap_or(full);
    let mut parts = base.rsplitn(3, "::");
    let last = parts.next().unwrap_or(base);
    match parts.next() {
        Some(module) => &base[base.len() - last.len() - module.len() - 2..],
        None => last,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_type_names_keep_the_module() {
        use super::short_type_name as s;
        assert_eq!(s("a::b::pleg::Relist"), "pleg::Relist");
        assert_eq!(s("Relist"), "Relist");
        assert_eq!(s("m::Wrap<other::Inner>"), "m::Wrap");
    }
}
