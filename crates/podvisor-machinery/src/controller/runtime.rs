//! The controller actor every [`Reconciler`] runs in: its reflectors deliver into the
//! caches, handlers' [`Effects`] are carried out, keys are synced by bounded workers, and
//! each sync's end goes through the error policy (see the module above).

use actix::prelude::*;
use podvisor_actors::due;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, Object, ObjectExt};
use podvisor_core::{ObjectKey, Uid};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{Effects, Reconciler, SyncError, Watches, World};
use crate::cache::Cache;
use crate::events::RecordEvent;
use crate::reflector::{Reflected, Reflector, Update};
use crate::workers::{Outcome, WorkStats, Workers};

/// The reflectors' markers: a generic actor cannot prove its three kinds different, so
/// each informer's deliveries are a type of their own.
pub struct RootSlot;
pub struct OwnedSlot;
pub struct TriggerSlot;

pub struct Controller<R: Reconciler> {
    reconciler: R,
    world: World<R>,
    roots_view: Reflector<R::Root, RootSlot>,
    owned_view: Reflector<R::Owned, OwnedSlot>,
    trigger_view: Option<Reflector<R::Trigger, TriggerSlot>>,
    workers: Workers<ObjectKey>,
    events: Recipient<RecordEvent>,
    /// Whether `on_synced` ran in this instance.
    synced: bool,
}

/// What the debug endpoint shows of a controller: its caches, its work, its own counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControllerSummary<C> {
    /// Roots and owned objects cached.
    pub objects: usize,
    pub owned: usize,
    #[serde(flatten)]
    pub work: WorkStats,
    #[serde(flatten)]
    pub counts: C,
}

impl<R: Reconciler> Controller<R> {
    /// `workers` syncs at once (kube-controller-manager runs five per controller).
    pub fn new(
        reconciler: R,
        client: Client,
        events: Recipient<RecordEvent>,
        workers: usize,
    ) -> Self {
        let Watches {
            roots,
            owned,
            trigger,
        } = reconciler.watches();
        Self {
            roots_view: Reflector::new(Api::all(client.clone()), roots),
            owned_view: Reflector::new(Api::all(client.clone()), owned),
            trigger_view: trigger.map(|p| Reflector::new(Api::all(client.clone()), p)),
            world: World {
                roots: Cache::new(),
                roots_listed: false,
                owned: reconciler.owned_cache(),
                client,
            },
            reconciler,
            workers: Workers::new(workers),
            events,
            synced: false,
        }
    }

    fn on_delayed(&mut self, key: ObjectKey, _: Instant, ctx: &mut Context<Self>) {
        self.workers.add(key);
        self.work(ctx);
    }

    /// Carries out what a handler or a sync asked, then starts what may start.
    fn apply(&mut self, fx: Effects, ctx: &mut Context<Self>) {
        self.carry_out(fx, ctx);
        self.work(ctx);
    }

    /// Carries out what a handler or a sync asked.
    fn carry_out(&mut self, fx: Effects, ctx: &mut Context<Self>) {
        for (key, after) in fx.keys {
            self.workers.add_after(key, after);
        }
        for task in fx.tasks {
            ctx.spawn(task.into_actor(self));
        }
        for (mut object, e) in fx.events {
            let uid = self
                .world
                .roots
                .get(&object)
                .map(|o| Uid::from(o.uid_str()));
            object.uid = uid.filter(|u| !u.as_str().is_empty());
            self.events.do_send(RecordEvent {
                object,
                type_: e.type_,
                reason: e.reason.into(),
                message: e.message,
            });
        }
    }

    /// Starts syncs while there is room and work, once both caches are filled.
    fn work(&mut self, ctx: &mut Context<Self>) {
        if !self.roots_view.synced || !self.owned_view.synced {
            return;
        }
        if !self.synced {
            self.synced = true;
            let mut fx = Effects::default();
            self.reconciler.on_synced(&self.world, &mut fx);
            return self.apply(fx, ctx);
        }
        while let Some(key) = self.workers.start() {
            self.sync(key, ctx);
        }
    }

    fn sync(&mut self, key: ObjectKey, ctx: &mut Context<Self>) {
        let mut fx = Effects::default();
        let root = self.world.roots.get(&key).cloned();
        let work = root.and_then(|r| self.reconciler.reconcile(&key, r, &self.world, &mut fx));
        // What this asked is carried out here; `work`'s loop starts what may start next
        // (starting it from here would recurse once per key skipped in a row).
        let Some(work) = work else {
            self.workers.skip(&key);
            return self.carry_out(fx, ctx);
        };
        ctx.spawn(work.into_actor(self).map(move |report, act, ctx| {
            let mut fx = Effects::default();
            let result = act.reconciler.reconciled(&key, report, &act.world, &mut fx);
            act.finished(&key, result);
            act.apply(fx, ctx);
        }));
        self.carry_out(fx, ctx);
    }

    /// The error policy.
    fn finished(
        &mut self,
        key: &ObjectKey,
        result: Result<Option<std::time::Duration>, SyncError>,
    ) {
        let delay = self.workers.finished(key, policy(&result));
        match (result, delay) {
            (Err(e), Some(delay)) if !e.is_conflict() => {
                warn!(controller = R::KIND, key = %key, error = %e, retry_in = ?delay, "sync failed; trying again")
            }
            (Err(e), _) => {
                debug!(controller = R::KIND, key = %key, error = %e, "sync met a newer version or none")
            }
            (Ok(_), _) => debug!(controller = R::KIND, key = %key, "synced"),
        }
    }
}

impl<R: Reconciler> Actor for Controller<R> {
    type Context = Context<Self>;
}

impl<R: Reconciler> SupervisedActor for Controller<R> {
    const KIND: &'static str = R::KIND;
    type Summary = ControllerSummary<R::Counts>;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.world.roots_listed = false;
        self.roots_view.start(ctx, start.me.recipient());
        self.owned_view.start(ctx, start.me.recipient());
        if let Some(view) = &mut self.trigger_view {
            view.start(ctx, start.me.recipient());
        }
        due::drive(ctx, |a: &mut Self| a.workers.delayed(), Self::on_delayed);
    }

    fn summary(&self) -> Self::Summary {
        ControllerSummary {
            objects: self.world.roots.len(),
            owned: self.world.owned.len(),
            work: self.workers.stats(),
            counts: self.reconciler.counts(),
        }
    }
}

impl<R: Reconciler> Handler<Reflected<R::Root, RootSlot>> for Controller<R> {
    type Result = ();
    fn handle(&mut self, msg: Reflected<R::Root, RootSlot>, ctx: &mut Context<Self>) {
        let Some(u) = self.roots_view.accept(msg, ctx) else {
            return;
        };
        self.world.roots_listed = self.roots_view.synced;
        let mut fx = Effects::default();
        for d in self.world.roots.apply(u) {
            fx.sync(key_of::<R::Root>(&d.key));
            self.reconciler.on_root(&d, &self.world, &mut fx);
        }
        self.apply(fx, ctx);
    }
}

impl<R: Reconciler> Handler<Reflected<R::Owned, OwnedSlot>> for Controller<R> {
    type Result = ();
    fn handle(&mut self, msg: Reflected<R::Owned, OwnedSlot>, ctx: &mut Context<Self>) {
        let Some(u) = self.owned_view.accept(msg, ctx) else {
            return;
        };
        let mut fx = Effects::default();
        for d in self.world.owned.apply(u) {
            self.reconciler.on_owned(&d, &self.world, &mut fx);
        }
        self.apply(fx, ctx);
    }
}

impl<R: Reconciler> Handler<Reflected<R::Trigger, TriggerSlot>> for Controller<R> {
    type Result = ();
    fn handle(&mut self, msg: Reflected<R::Trigger, TriggerSlot>, ctx: &mut Context<Self>) {
        let Some(view) = &mut self.trigger_view else {
            return;
        };
        let Some(u): Option<Update<R::Trigger>> = view.accept(msg, ctx) else {
            return;
        };
        let mut fx = Effects::default();
        self.reconciler.on_trigger(&u, &self.world, &mut fx);
        self.apply(fx, ctx);
    }
}

/// What a sync's end means to the work queue.
pub(crate) fn policy(result: &Result<Option<std::time::Duration>, SyncError>) -> Outcome {
    match result {
        Ok(again) => Outcome::Synced(*again),
        Err(e) if e.is_not_found() => Outcome::Synced(None),
        Err(e) if e.is_conflict() => Outcome::Retry,
        Err(_) => Outcome::Failed,
    }
}

/// A cache's key as the root's key (the kind it names is the root's).
fn key_of<K: Object>(key: &ObjectKey) -> ObjectKey {
    ObjectKey::new(K::TYPE, key.namespace.as_deref(), &key.name)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use podvisor_client::Error;

    use super::*;

    fn failed(e: Error) -> Result<Option<Duration>, SyncError> {
        Err(SyncError::new("writing", e))
    }

    #[test]
    fn a_conflict_is_retried_a_gone_object_forgotten_the_rest_failed() {
        let later = Some(Duration::from_secs(3));
        assert_eq!(policy(&Ok(later)), Outcome::Synced(later));
        let conflict = Error::conflict("pods", "a", "changed");
        assert_eq!(policy(&failed(conflict)), Outcome::Retry);
        let gone = Error::NotFound {
            resource: "pods".into(),
            name: "a".into(),
        };
        assert_eq!(policy(&failed(gone)), Outcome::Synced(None));
        let refused = Error::BadRequest("no".into());
        assert_eq!(policy(&failed(refused)), Outcome::Failed);
    }
}
