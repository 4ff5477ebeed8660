//! Helpers for testing actors (feature `testing`): an actix system on paused tokio time, a
//! polling wait that advances that time, and a collector actor that records whatever
//! messages it is sent, to stand in for any peer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Context, Handler, Message};

use crate::actor::{StartInfo, SupervisedActor};
use crate::supervisor::ChildSpec;
use crate::{ActorRef, Recipient};

/// An actix system whose tokio clock is paused: timers fire as soon as everything is idle,
/// so tests of backoffs and periods take no real time.
pub fn paused_system() -> actix::SystemRunner {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("tokio runtime")
    })
}

/// Polls `cond` every (virtual) millisecond until it holds; panics after `limit`.
pub async fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// What a [`Collector`] has received, shared with the test.
pub struct Collected<M>(Arc<Mutex<Vec<M>>>);

impl<M> Clone for Collected<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M> Default for Collected<M> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<M: Clone> Collected<M> {
    pub fn take(&self) -> Vec<M> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn snapshot(&self) -> Vec<M> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Records every `M` it is sent.
pub struct Collector<M>(Collected<M>);

impl<M: Unpin + 'static> Actor for Collector<M> {
    type Context = Context<Self>;
}

impl<M: Unpin + 'static> SupervisedActor for Collector<M> {
    const KIND: &'static str = "collector";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

impl<M> Handler<M> for Collector<M>
where
    M: Message<Result = ()> + Unpin + 'static,
{
    type Result = ();
    fn handle(&mut self, msg: M, _: &mut Context<Self>) {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner()).push(msg);
    }
}

/// A collector as a child to supervise, with what it collects. Keyed by the message's
/// type, so one tree can hold a collector of each.
pub fn collector<M>() -> (ActorRef<Collector<M>>, ChildSpec, Collected<M>)
where
    M: Message<Result = ()> + Send + Unpin + 'static,
{
    let seen = Collected::default();
    let s = seen.clone();
    let (me, spec) = ChildSpec::of(move || Collector(s.clone()))
        .key(std::any::type_name::<M>())
        .capacity(1 << 16)
        .build();
    (me, spec, seen)
}

/// A collector running on its own (no supervisor), as a recipient of `M`.
pub fn start_collector<M>() -> (Recipient<M>, Collected<M>)
where
    M: Message<Result = ()> + Send + Unpin + 'static,
{
    let seen = Collected::default();
    let s = seen.clone();
    let me = ChildSpec::of(move || Collector(s.clone()))
        .capacity(1 << 16)
        .start_unsupervised();
    (me.recipient(), seen)
}
