//! A reflector (client-go's, kube-runtime's): keeps an actor's view of some objects
//! current by listing them and then following a watch from the list's revision, into the
//! actor's own context. The actor gets the full list (`Update::Reset`) and then every
//! change (`Update::Change`), in revision order. When the watch ends (the store restarted
//! or cut a slow watcher off) it resumes from the last revision seen; when that revision is
//! too old (410) it lists again; when the store cannot answer it retries every second.
//!
//! An actor with reflectors handles [`Reflected`] and passes each to the reflector its `id`
//! names ([`Reflector::accept`]); what comes back is what to apply. A reflector restarted
//! (`start` again, or the actor restarted) ignores what its earlier runs still deliver.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::Recipient;
use podvisor_store::actor::{List, Watch, WatchEvent};
use podvisor_store::{Change, ListPage, Selector, StoreError, StoredObject};
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

const RETRY: Duration = Duration::from_secs(1);
const RESUME: Duration = Duration::from_millis(100);

pub struct Reflector {
    id: &'static str,
    selector: Selector,
    source: Source,
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
            generation: 0,
            revision: 0,
            synced: false,
        }
    }

    /// Lists, then watches, into the actor's context.
    pub fn start<A>(&mut self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        self.generation += 1;
        self.synced = false;
        self.list(ctx);
    }

    fn deliver(&self, event: Event) -> Reflected {
        Reflected {
            id: self.id,
            generation: self.generation,
            event,
        }
    }

    fn list<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        let msg = List {
            selector: self.selector.clone(),
            limit: None,
            continue_token: None,
        };
        let list = self.source.list.clone();
        let (id, generation) = (self.id, self.generation);
        let work = actix::fut::wrap_future::<_, A>(async move { list.send(msg).await });
        ctx.spawn(work.map(move |r, _, ctx: &mut Context<A>| {
            let event = match r {
                Ok(Ok(page)) => Event::Listed(page),
                other => {
                    let error = other.err().map(|e| e.to_string());
                    warn!(
                        reflector = id,
                        ?error,
                        "cannot list from the store; retrying"
                    );
                    let retry = Reflected {
                        id,
                        generation,
                        event: Event::RetryList,
                    };
                    ctx.notify_later(retry, RETRY);
                    return;
                }
            };
            ctx.notify(Reflected {
                id,
                generation,
                event,
            });
        }));
    }

    fn watch<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected>,
    {
        let msg = Watch {
            selector: self.selector.clone(),
            from: Some(self.revision),
        };
        let watch = self.source.watch.clone();
        let (id, generation) = (self.id, self.generation);
        let work = actix::fut::wrap_future::<_, A>(async move { watch.send(msg).await });
        ctx.spawn(work.map(move |r, _, ctx: &mut Context<A>| match r {
            Ok(Ok(rx)) => {
                ctx.add_message_stream(follow(rx, id, generation));
            }
            Ok(Err(StoreError::Gone { .. })) => {
                ctx.notify(Reflected {
                    id,
                    generation,
                    event: Event::Relist,
                });
            }
            other => {
                let error = other.err().map(|e| e.to_string());
                warn!(reflector = id, ?error, "cannot watch the store; retrying");
                let retry = Reflected {
                    id,
                    generation,
                    event: Event::RetryWatch,
                };
                ctx.notify_later(retry, RETRY);
            }
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
                ctx.notify_later(self.deliver(Event::RetryWatch), RESUME);
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

/// The watch's events, then its end.
fn follow(
    rx: mpsc::Receiver<WatchEvent>,
    id: &'static str,
    generation: u64,
) -> impl futures_util::Stream<Item = Reflected> {
    let events = futures_util::stream::unfold(rx, move |mut rx| async move {
        let e = rx.recv().await?;
        let msg = Reflected {
            id,
            generation,
            event: Event::Watched(e),
        };
        Some((msg, rx))
    });
    let end = futures_util::stream::once(async move {
        Reflected {
            id,
            generation,
            event: Event::Ended,
        }
    });
    futures_util::StreamExt::chain(events, end)
}
