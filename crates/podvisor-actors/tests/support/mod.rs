//! A test actor that can be told to fail in every way an actor can, and helpers to run an
//! actix system on paused tokio time.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{ActorRef, StartInfo, SupervisedActor};

/// What happened, in order, across all instances: "start:<name>:<restarts>".
#[derive(Clone, Default)]
pub struct Journal(Arc<Mutex<Vec<String>>>);

impl Journal {
    pub fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn starts(&self, name: &str) -> usize {
        let prefix = format!("start:{name}:");
        self.entries()
            .iter()
            .filter(|e| e.starts_with(&prefix))
            .count()
    }
}

pub struct Worker {
    pub name: String,
    pub journal: Journal,
    pub me: Option<ActorRef<Worker>>,
    pub handled: u64,
    pub crash_in_rebuild: bool,
}

impl Worker {
    pub fn new(name: &str, journal: &Journal) -> Self {
        Self {
            name: name.to_string(),
            journal: journal.clone(),
            me: None,
            handled: 0,
            crash_in_rebuild: false,
        }
    }
}

impl Actor for Worker {
    type Context = Context<Self>;
}

impl SupervisedActor for Worker {
    const KIND: &'static str = "worker";
    type Summary = u64;

    fn rebuild(&mut self, _ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.journal
            .push(format!("start:{}:{}", self.name, start.restarts));
        self.me = Some(start.me.clone());
        if self.crash_in_rebuild {
            panic!("crash in rebuild");
        }
    }

    fn summary(&self) -> u64 {
        self.handled
    }
}

/// Answers with the number of messages this instance handled.
#[derive(Message)]
#[rtype(result = "u64")]
pub struct Ping;

impl Handler<Ping> for Worker {
    type Result = u64;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> u64 {
        self.handled += 1;
        self.handled
    }
}

#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub enum Crash {
    InHandler,
    InAsyncHandler,
    InTimer,
    InSpawnedFuture,
    WithError,
}

impl Handler<Crash> for Worker {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, how: Crash, ctx: &mut Context<Self>) -> Self::Result {
        match how {
            Crash::InHandler => panic!("crash in handler"),
            Crash::InAsyncHandler => {
                return Box::pin(
                    async { tokio::task::yield_now().await }
                        .into_actor(self)
                        .map(|_, _, _| panic!("crash in async handler")),
                );
            }
            Crash::InTimer => {
                ctx.run_later(Duration::from_millis(5), |_, _| panic!("crash in timer"));
            }
            Crash::InSpawnedFuture => {
                ctx.spawn(
                    async { tokio::time::sleep(Duration::from_millis(5)).await }
                        .into_actor(self)
                        .map(|_, _, _| panic!("crash in spawned future")),
                );
            }
            Crash::WithError => {
                let me = self.me.clone().unwrap();
                me.fail(ctx, "cannot go on");
            }
        }
        Box::pin(actix::fut::ready(()))
    }
}

/// Blocks the actor's thread for the given time: a deliberately slow handler.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Block(pub Duration);

impl Handler<Block> for Worker {
    type Result = ();
    fn handle(&mut self, Block(d): Block, _: &mut Context<Self>) {
        std::thread::sleep(d);
        self.handled += 1;
    }
}

/// Keeps the actor busy (in `ctx.wait`, so nothing else is handled, a stop included) for
/// the given time: an actor slow to stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Linger(pub Duration);

impl Handler<Linger> for Worker {
    type Result = ();
    fn handle(&mut self, Linger(d): Linger, ctx: &mut Context<Self>) {
        ctx.wait(tokio::time::sleep(d).into_actor(self));
    }
}

/// Fire-and-forget increment, for throughput and counting tests.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Tick;

impl Handler<Tick> for Worker {
    type Result = ();
    fn handle(&mut self, _: Tick, _: &mut Context<Self>) {
        self.handled += 1;
    }
}

#[allow(unused_imports)]
pub use podvisor_actors::testing::{paused_system, until};

/// Stops the instance cleanly (its work is done).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Finish;

impl Handler<Finish> for Worker {
    type Result = ();
    fn handle(&mut self, _: Finish, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
