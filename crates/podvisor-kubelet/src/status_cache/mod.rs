//! The pod status cache actor: the newest runtime status of every pod, filled by the PLEG,
//! the place pod workers wait for "status newer than my last sync", and the source the
//! status manager follows (every stored status is sent to the subscribers).
//!
//! A restarted cache starts empty; its supervisor restarts the PLEG with it (rest-for-one),
//! and the fresh PLEG's first relist inspects every pod. Waiters of the crashed instance
//! get an error at once (their reply channels are dropped with it) and ask again.

mod store;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::PodUid;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

use store::Store;

use crate::protocol::cache::{
    DeleteStatus, GetNewerThan, GetStatus, SetStatus, StatusChanged, UpdateTime,
};

/// How often abandoned waits are swept.
const PRUNE_EVERY: Duration = Duration::from_secs(30);
/// Most pods listed in the debug summary's `waiting` map.
const SUMMARY_WAITING_MAX: usize = 20;

#[derive(Default)]
pub struct StatusCache {
    store: Store,
    /// Told of every status stored (the status manager).
    subscribers: Vec<Recipient<StatusChanged>>,
    /// The global timestamp as wall-clock milliseconds, for humans.
    timestamp_unix_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusCacheSummary {
    pub pods: usize,
    pub global_timestamp_unix_ms: Option<u64>,
    /// Waiting subscribers per pod (at most 20 pods listed).
    pub waiting: BTreeMap<PodUid, usize>,
    pub waiting_total: usize,
}

impl StatusCache {
    pub fn new(subscribers: Vec<Recipient<StatusChanged>>) -> Self {
        Self {
            subscribers,
            ..Default::default()
        }
    }
}

fn unix_ms_of(t: Instant) -> u64 {
    let ago = Instant::now().saturating_duration_since(t);
    SystemTime::now()
        .checked_sub(ago)
        .and_then(|w| w.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Actor for StatusCache {
    type Context = Context<Self>;
}

impl SupervisedActor for StatusCache {
    const KIND: &'static str = "status-cache";
    type Summary = StatusCacheSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _start: &StartInfo<Self>) {
        // Nothing to reload: the PLEG restarts with the cache and refills it.
        ctx.run_interval(PRUNE_EVERY, |act, _| act.store.prune());
    }

    fn summary(&self) -> StatusCacheSummary {
        let waiting = self.store.waiting();
        StatusCacheSummary {
            pods: self.store.len(),
            global_timestamp_unix_ms: self.timestamp_unix_ms,
            waiting_total: waiting.values().sum(),
            waiting: waiting.into_iter().take(SUMMARY_WAITING_MAX).collect(),
        }
    }
}

impl Handler<GetStatus> for StatusCache {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.store.get(&msg.uid))
    }
}

impl Handler<SetStatus> for StatusCache {
    type Result = bool;
    fn handle(&mut self, msg: SetStatus, _: &mut Context<Self>) -> bool {
        let Some(data) = self.store.set(&msg.uid, msg.status, msg.at) else {
            return false;
        };
        for s in &self.subscribers {
            s.do_send(StatusChanged {
                uid: msg.uid.clone(),
                data: data.clone(),
            });
        }
        true
    }
}

impl Handler<DeleteStatus> for StatusCache {
    type Result = ();
    fn handle(&mut self, msg: DeleteStatus, _: &mut Context<Self>) {
        self.store.delete(&msg.uid);
    }
}

impl Handler<UpdateTime> for StatusCache {
    type Result = ();
    fn handle(&mut self, UpdateTime(t): UpdateTime, _: &mut Context<Self>) {
        self.store.update_time(t);
        if self.store.timestamp() == Some(t) {
            self.timestamp_unix_ms = Some(unix_ms_of(t));
        }
    }
}

impl Handler<GetNewerThan> for StatusCache {
    type Result = MessageResult<GetNewerThan>;
    fn handle(&mut self, msg: GetNewerThan, _: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.store.subscribe(&msg.uid, msg.need, tx);
        MessageResult(rx)
    }
}
