//! A reflector (client-go's, kube-runtime's): keeps an actor's view of some objects of one
//! kind current by listing them through an [`Api`] and then following a watch from the
//! list's version, into the actor's own context. The actor gets the full list
//! (`Update::Reset`) and then every change (`Update::Change`), in order. When the watch
//! ends (the API restarted, or cut a slow watcher off) it resumes from the last version
//! seen; when that version is too old (`Gone`) it lists again; when the API cannot answer
//! it tries again after a growing, jittered wait (`backoff.rs`), warning at the first
//! failure of a streak and at every tenth. Whichever backend the `Api` talks to, the
//! reflector is the same.
//!
//! An actor with reflectors handles [`Reflected<K>`] for each kind and passes each to its
//! reflector ([`Reflector::accept`]); what comes back is what to apply. The second type
//! parameter, a marker (`()` by default), tells apart reflectors whose kinds a generic
//! actor cannot prove different (the controller runtime's root, owned and trigger kinds). Every delivery goes
//! through the actor's own mailbox (its `StartInfo::me`), so the debug endpoint counts
//! them, and a full mailbox slows the watch down instead of losing anything. The work runs
//! in the actor's context, so it ends with the instance; a reflector restarted (`start`
//! again, or the actor restarted) ignores what its earlier runs still deliver.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;
use podvisor_actors::Recipient;
use podvisor_client::{Api, Error, ListParams, Object, ObjectList, WatchEvent, WatchStream};
use tracing::{debug, info, warn};

use crate::backoff::Backoff;

/// Something for a reflector of `K`: deliver it to [`Reflector::accept`].
pub struct Reflected<K: Object, S = ()> {
    generation: u64,
    event: Event<K>,
    slot: PhantomData<fn() -> S>,
}

impl<K: Object, S: 'static> Reflected<K, S> {
    fn new(generation: u64, event: Event<K>) -> Self {
        Self {
            generation,
            event,
            slot: PhantomData,
        }
    }
}

impl<K: Object, S: 'static> Message for Reflected<K, S> {
    type Result = ();
}

enum Event<K> {
    Listed(ObjectList<Arc<K>>),
    Watched(WatchEvent<Arc<K>>),
    /// The watch ended: resume it.
    Ended,
    /// The API refused the watch's version (`Gone`): list again.
    Relist,
    /// The API could not answer the list, or the watch: wait, then try again.
    ListFailed(Error),
    WatchFailed(Error),
    /// The wait is over.
    RetryList,
    RetryWatch,
}

/// What the actor applies to its view.
#[derive(Debug)]
pub enum Update<K> {
    /// Everything that matches, now: replaces the view.
    Reset(Vec<Arc<K>>),
    /// One change (never a bookmark).
    Change(WatchEvent<Arc<K>>),
}

/// Every run of every reflector gets its own generation.
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

const RESUME: Duration = Duration::from_millis(100);

pub struct Reflector<K: Object, S: 'static = ()> {
    api: Api<K>,
    params: ListParams,
    /// The actor's own mailbox, set by `start`.
    me: Option<Recipient<Reflected<K, S>>>,
    generation: u64,
    /// The newest version seen: a watch resumes after it.
    pub version: String,
    /// Whether the first list has arrived.
    pub synced: bool,
    backoff: Backoff,
}

impl<K: Object, S: 'static> Reflector<K, S> {
    pub fn new(api: Api<K>, params: ListParams) -> Self {
        Self {
            api,
            params,
            me: None,
            generation: 0,
            version: String::new(),
            synced: false,
            backoff: Backoff::default(),
        }
    }

    /// Lists, then watches, delivering to `me` (the actor's own mailbox).
    pub fn start<A>(&mut self, ctx: &mut Context<A>, me: Recipient<Reflected<K, S>>)
    where
        A: Actor<Context = Context<A>> + Handler<Reflected<K, S>>,
    {
        // From one counter for the whole process: a restarted actor is a new value whose
        // mailbox still holds what its predecessor's runs sent; none of it may pass.
        self.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1;
        self.synced = false;
        self.me = Some(me);
        self.list(ctx);
    }

    /// Runs `work` in the actor's context and delivers what it answers.
    fn spawn<A>(&self, ctx: &mut Context<A>, work: impl Future<Output = Event<K>> + 'static)
    where
        A: Actor<Context = Context<A>>,
    {
        let Some(me) = self.me.clone() else { return };
        let generation = self.generation;
        ctx.spawn(actix::fut::wrap_future::<_, A>(async move {
            let event = work.await;
            let _ = me.send(Reflected::new(generation, event)).await;
        }));
    }

    fn list<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>>,
    {
        let (api, params) = (self.api.clone(), self.params.clone());
        self.spawn(ctx, async move {
            match api.list(&params).await {
                Ok(page) => Event::Listed(page),
                Err(e) => Event::ListFailed(e),
            }
        });
    }

    fn watch<A>(&self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>>,
    {
        let Some(me) = self.me.clone() else { return };
        let (api, params, version) = (self.api.clone(), self.params.clone(), self.version.clone());
        let generation = self.generation;
        self.spawn(ctx, async move {
            match api.watch(&params, &version).await {
                Ok(events) => follow(events, &me, generation).await,
                Err(Error::Gone(_)) => Event::Relist,
                Err(e) => Event::WatchFailed(e),
            }
        });
    }

    /// Takes one delivery; what the actor must apply, if anything.
    pub fn accept<A>(&mut self, msg: Reflected<K, S>, ctx: &mut Context<A>) -> Option<Update<K>>
    where
        A: Actor<Context = Context<A>> + Handler<Reflected<K, S>>,
    {
        if msg.generation != self.generation {
            return None;
        }
        match msg.event {
            Event::Listed(page) => {
                self.backoff.reset();
                self.version = page.resource_version;
                self.synced = true;
                self.watch(ctx);
                Some(Update::Reset(page.items))
            }
            Event::ListFailed(e) => self.retry(ctx, "list", &e, Event::RetryList),
            Event::WatchFailed(e) => self.retry(ctx, "watch", &e, Event::RetryWatch),
            Event::Watched(WatchEvent::Bookmark(v)) => {
                self.version = v;
                None
            }
            Event::Watched(e) => {
                self.backoff.reset();
                if let Some(v) = e
                    .object()
                    .and_then(|o| o.metadata().resource_version.clone())
                {
                    self.version = v;
                }
                Some(Update::Change(e))
            }
            Event::Ended => {
                info!(kind = %K::TYPE, version = %self.version, "watch ended; resuming");
                let retry = async {
                    tokio::time::sleep(RESUME).await;
                    Event::RetryWatch
                };
                self.spawn(ctx, retry);
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

impl<K: Object, S: 'static> Reflector<K, S> {
    /// A failed list or watch: `then` after the backoff's next wait.
    fn retry<A>(
        &mut self,
        ctx: &mut Context<A>,
        what: &str,
        e: &Error,
        then: Event<K>,
    ) -> Option<Update<K>>
    where
        A: Actor<Context = Context<A>> + Handler<Reflected<K, S>>,
    {
        let wait = self.backoff.fail();
        let failures = self.backoff.failures;
        if self.backoff.loud() {
            warn!(kind = %K::TYPE, error = %e, failures, ?wait, "cannot {what}; retrying");
        } else {
            debug!(kind = %K::TYPE, error = %e, failures, ?wait, "cannot {what}; retrying");
        }
        self.spawn(ctx, async move {
            tokio::time::sleep(wait).await;
            then
        });
        None
    }
}

/// Forwards the watch's events to the actor until the watch ends (or the actor is gone);
/// how it ended.
async fn follow<K: Object, S: 'static>(
    mut events: WatchStream<Arc<K>>,
    me: &Recipient<Reflected<K, S>>,
    generation: u64,
) -> Event<K> {
    while let Some(e) = events.next().await {
        let event = match e {
            Ok(e) => Event::Watched(e),
            Err(Error::Gone(_)) => return Event::Relist,
            Err(e) => {
                warn!(kind = %K::TYPE, error = %e, "the watch failed; resuming");
                return Event::Ended;
            }
        };
        if me.send(Reflected::new(generation, event)).await.is_err() {
            return Event::Ended;
        }
    }
    Event::Ended
}
