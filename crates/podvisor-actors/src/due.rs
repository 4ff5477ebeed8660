//! Timers for actors that keep many deadlines: one keyed delay queue per actor (tokio-util's
//! `DelayQueue`, whose timer wheel holds any number of entries behind a single sleep), polled
//! from inside the actor's own context. No task and no timer per key, and nothing runs while
//! nothing is due. The model is kube-runtime's `scheduler.rs`: one entry per key, and
//! scheduling a key that is already scheduled moves it rather than adding a second entry.
//!
//! The queue lives in the actor's state, so it dies with a crashed instance: actors rebuild
//! their deadlines from the truth in `rebuild`, never from the old queue.

use std::collections::HashMap;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use actix::{Actor, ActorFuture, AsyncContext, Context};
use tokio::time::Instant;
use tokio_util::time::DelayQueue;
use tokio_util::time::delay_queue::Key;

/// Deadlines by key; at most one per key.
pub struct DueQueue<K> {
    queue: DelayQueue<K>,
    keys: HashMap<K, Key>,
}

impl<K: Clone + Eq + Hash> Default for DueQueue<K> {
    fn default() -> Self {
        Self {
            queue: DelayQueue::new(),
            keys: HashMap::new(),
        }
    }
}

impl<K: Clone + Eq + Hash> DueQueue<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// `key` is due at `at`, replacing whatever was scheduled for it.
    pub fn schedule(&mut self, key: K, at: Instant) {
        match self.keys.get(&key) {
            Some(k) => self.queue.reset_at(k, at),
            None => {
                let k = self.queue.insert_at(key.clone(), at);
                self.keys.insert(key, k);
            }
        }
    }

    /// `key` is due at `at` or at what it was due before, whichever is sooner.
    pub fn schedule_earliest(&mut self, key: K, at: Instant) {
        match self.deadline(&key) {
            Some(existing) if existing <= at => {}
            _ => self.schedule(key, at),
        }
    }

    /// Forgets `key`'s deadline; whether it had one.
    pub fn cancel(&mut self, key: &K) -> bool {
        match self.keys.remove(key) {
            Some(k) => self.queue.try_remove(&k).is_some(),
            None => false,
        }
    }

    pub fn deadline(&self, key: &K) -> Option<Instant> {
        self.keys.get(key).map(|k| self.queue.deadline(k))
    }

    /// The soonest deadline of all.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.peek().map(|k| self.queue.deadline(&k))
    }

    pub fn contains(&self, key: &K) -> bool {
        self.keys.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The next key whose time has come, with its deadline. `Pending` while nothing is
    /// due, also when the queue is empty: scheduling wakes the task that polled last.
    pub fn poll_due(&mut self, cx: &mut TaskContext<'_>) -> Poll<(K, Instant)> {
        match self.queue.poll_expired(cx) {
            Poll::Ready(Some(expired)) => {
                let deadline = expired.deadline();
                let key = expired.into_inner();
                self.keys.remove(&key);
                Poll::Ready((key, deadline))
            }
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

/// How many due keys one poll hands out before yielding to the actor's other work.
const BATCH: usize = 64;

/// Polls the actor's queue (found by `queue`) inside its context and calls `on_due` for
/// each key whose time has come. Start it once, in `rebuild`.
pub fn drive<A, K>(
    ctx: &mut Context<A>,
    queue: fn(&mut A) -> &mut DueQueue<K>,
    on_due: fn(&mut A, K, Instant, &mut Context<A>),
) where
    A: Actor<Context = Context<A>>,
    K: Clone + Eq + Hash + 'static,
{
    ctx.spawn(Driver { queue, on_due });
}

struct Driver<A: Actor<Context = Context<A>>, K> {
    queue: fn(&mut A) -> &mut DueQueue<K>,
    on_due: fn(&mut A, K, Instant, &mut Context<A>),
}

impl<A, K> ActorFuture<A> for Driver<A, K>
where
    A: Actor<Context = Context<A>>,
    K: Clone + Eq + Hash + 'static,
{
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut A,
        ctx: &mut Context<A>,
        task: &mut TaskContext<'_>,
    ) -> Poll<()> {
        let (queue, on_due) = (self.queue, self.on_due);
        for _ in 0..BATCH {
            match queue(act).poll_due(task) {
                Poll::Ready((key, at)) => on_due(act, key, at, ctx),
                Poll::Pending => return Poll::Pending,
            }
        }
        task.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
#[path = "due_tests.rs"]
mod tests;
