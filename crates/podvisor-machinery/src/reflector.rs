//! A reflector (client-go's, kube-runtime's): keeps an actor's view of some objects
//! current by listing them and then following a watch from the list's revision, into the
//! actor's own context. The actor gets the full list (`Update::Reset`) and then every
//! change (`Update::Change`), in revision order. When the watch ends (the store restarted
//! or cut a slow watcher off) it resumes from the last revision seen; when that revision is
//! too old (410) it lists again; when the store cannot answer it retries every second.
//!
//! An actor with reflectors handles [`Reflected`] and passes each to the reflector its `id`
//! names ([`Reflector::accept`]); what comes back is what to apply. Every delivery goes
//! through the actor's own mailbox (its `StartInfo::me`), so the debug endpoint counts
//! them, and a full mailbox slows the watch down instead of losing anything (the store cuts
//! off a watcher that falls too far behind, and the reflector resumes). The work runs in
//! the actor's context, so it ends with the instance; a reflector restarted (`start` again,
//! or the actor restarted) ignores what its earlier runs still deliver.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{ActorRef, Recipient};
use podvisor_store::actor::{List, Watch, WatchEvent};
use podvisor_store::{Change, ListPage, Selector, StoreActor, StoreError, StoredObject};
use tokio::sync::mpsc;
use tracing::{info, warn};

/// Something for the reflector `id`: deliver it to [`Reflector::accept`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reflected {
    pub id: &'static str,
    generation: u64,
    event: Event,
}

enum Event {
    Listed(ListPage),
    Watched(WatchEvent),
    /// The watch ended: resume it.
    Ended,
    /// The store refused the watch's revision (410): list again.
    Relist,
    /// The store could not answer; try again.
    RetryList,
    RetryWatch,
}

/// What the actor applies to its view.
#[derive(Debug)]
pub enum Update {
    /// Everything that matches, now: replaces the view.
    Reset(Vec<Arc<StoredObject>>),
    Change(Change),
}

/// Where a reflector reads.
#[derive(Clone)]
pub struct Source {
    pub list: Recipient<List>,
    pub watch: Recipient<Watch>,
}

impl Source {
    /// Reading from the store actor itself.
    pub fn of(store: &ActorRef<StoreActor>) -> Self {
        Self {
            list: store.recipient(),
            watch: store.recipient(),
        }
    }
}

/// Every run of every reflector gets its own generation.
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

const RETRY: Duration = Duration::from_secs(1);
const RESUME: Duration = Duration::from_millis(100);

pub struct Reflector {
    id: &'static str,
    selector: Selector,
    source: Source,
    /// The actor's own mailbox, set by `start`.
    me: Option<Recipient<Reflected>>,
    generation: u64,
    /// The newest revision seen: a watch resumes after it.
    pub revision: u64,
    /// Whether the first list has arrived.
    pub synced: bool,
}

impl Reflector {
    pub fn new(id: &'static str, selector: Selector, source: Source) -> Self {
        Self {
            id,
            selector,
            source,
            me: None,
            generation: 0,
            revision: 0,
            synced: false,
        }
    }

    /// Lists, then watches, delivering to `me` (the actor's own mailbox).
    pub fn start<A>(&mut self, ctx: &mut Context<A>, me: Recipient<Reflected>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        // From one counter for the whole process: a restarted actor is a new value whose
        // mailbox still holds what its predecessor's runs sent; none of it may pass.
        self.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1;
        self.synced = false;
        self.me = Some(me);
        self.list(ctx);
    }

    /// Sends `event` to the actor (after `after`), from inside its context.
    fn deliver<A>(&self, ctx: &mut Context<A>, event: Event, after: Duration)
    where
        A: Actor<Context = Context<A>>,
    {
        let Some(me) = self.me.clone() else { return };
        let msg = Reflected {
            id: self.id,
            generation: self.generation,
            event,
        };
        ctx.spawn(actix::fut::wrap_future::<_, A>(async move {
            if !after.is_zero() {
                tokio::time::sleep(after).await;
            }
            let _ = me.send(msg).await;
        }));
    }

    fn list<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        let Some(me) = self.me.clone() else { return };
        let msg = List {
            selector: self.selector.clone(),
            limit: None,
            continue_token: None,
        };
        let list = self.source.list.clone();
        let (id, generation) = (self.id, self.generation);
        ctx.spawn(actix::fut::wrap_future::<_, A>(async move {
            let event = match list.send(msg).await {
                Ok(Ok(page)) => Event::Listed(page),
                other => {
                    let error = other.err().map(|e| e.to_string());
                    warn!(
                        reflector = id,
                        ?error,
                        "cannot list from the store; retrying"
                    );
                    tokio::time::sleep(RETRY).await;
                    Event::RetryList
                }
            };
            let _ = me
                .send(Reflected {
                    id,
                    generation,
                    event,
                })
                .await;
        }));
    }

    fn watch<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        let Some(me) = self.me.clone() else { return };
        let msg = Watch {
            selector: self.selector.clone(),
            from: Some(self.revision),
        };
        let watch = self.source.watch.clone();
        let (id, generation) = (self.id, self.generation);
        let to = move |event| Reflected {
            id,
            generation,
            event,
        };
        ctx.spawn(actix::fut::wrap_future::<_, A>(async move {
            let end = match watch.send(msg).await {
                Ok(Ok(rx)) => {
                    follow(rx, &me, to).await;
                    Event::Ended
                }
                Ok(Err(StoreError::Gone { .. })) => Event::Relist,
                other => {
                    let error = other.err().map(|e| e.to_string());
                    warn!(reflector = id, ?error, "cannot watch the store; retrying");
                    tokio::time::sleep(RETRY).await;
                    Event::RetryWatch
                }
            };
            let _ = me.send(to(end)).await;
        }));
    }

    /// Takes one delivery; what the actor must apply, if anything.
    pub fn accept<A>(&mut self, msg: Reflected, ctx: &mut Context<A>) -> Option<Update>
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        if msg.id != self.id || msg.generation != self.generation {
            return None;
        }
        match msg.event {
            Event::Listed(page) => {
                self.revision = page.revision;
                self.synced = true;
                self.watch(ctx);
                Some(Update::Reset(page.items))
            }
            Event::Watched(WatchEvent::Change(c)) => {
                self.revision = self.revision.max(c.revision);
                Some(Update::Change(c))
            }
            Event::Watched(WatchEvent::Bookmark(rev)) => {
                self.revision = self.revision.max(rev);
                None
            }
            Event::Ended => {
                info!(
                    reflector = self.id,
                    revision = self.revision,
                    "watch ended; resuming"
                );
                self.deliver(ctx, Event::RetryWatch, RESUME);
                None
            }
            Event::RetryWatch => {
                self.watch(ctx);
                None
            }
            Event::Relist | Event::RetryList => {
                self.list(ctx);
                None
            }
        }
    }
}

/// Forwards the watch's events to the actor until the watch ends (or the actor is gone).
async fn follow(
    mut rx: mpsc::Receiver<WatchEvent>,
    me: &Recipient<Reflected>,
    to: impl Fn(Event) -> Reflected,
) {
    while let Some(e) = rx.recv().await {
        if me.send(to(Event::Watched(e))).await.is_err() {
            return;
        }
    }
}
