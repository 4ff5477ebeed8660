//! The status cache's rules, as plain data: what the newest status of each pod is, how
//! fresh the whole cache is, and who is waiting for what. The actor around it only moves
//! messages in and out.
//!
//! Times are monotonic instants. "Newer than `t`" is strict everywhere: a waiter asking
//! for data newer than `t` is answered by data stamped after `t`, or by a global timestamp
//! after `t` (every pod's data is at least that fresh). A waiter may also name a container
//! whose start suffices: data showing it started answers it whatever its stamp.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use podvisor_core::PodUid;
use podvisor_cri::{CriError, PodStatus};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::protocol::cache::{CachedStatus, ContainerId, Need};

struct Entry {
    data: CachedStatus,
    modified: Instant,
}

struct Waiter {
    need: Need,
    seq: u64,
    reply: oneshot::Sender<CachedStatus>,
}

#[derive(Default)]
pub(crate) struct Store {
    pods: HashMap<PodUid, Entry>,
    timestamp: Option<Instant>,
    waiters: BTreeMap<PodUid, Vec<Waiter>>,
    next_seq: u64,
    /// The order waiters were answered in (`min`, arrival number), for the tests.
    #[cfg(test)]
    answered: Vec<(Option<Instant>, u64)>,
}

impl Store {
    pub(crate) fn get(&self, uid: &PodUid) -> CachedStatus {
        self.pods
            .get(uid)
            .map(|e| e.data.clone())
            .unwrap_or_else(|| CachedStatus::empty(uid))
    }

    /// `min == None` stands for the beginning of time: any data, or any relist at all.
    fn newer_than(&self, uid: &PodUid, need: &Need) -> Option<CachedStatus> {
        let after = |t: Instant| need.min.is_none_or(|m| t > m);
        let global = self.timestamp.is_some_and(after);
        let shows = |e: &Entry| {
            let started = |c: &ContainerId| c.started_in(&e.data.status);
            need.showing.as_ref().is_some_and(started)
        };
        match self.pods.get(uid) {
            Some(e) if after(e.modified) || global || shows(e) => Some(e.data.clone()),
            None if global => Some(CachedStatus::empty(uid)),
            _ => None,
        }
    }

    /// Stores `status` (or the error inspecting the pod gave) unless the cache already
    /// holds something newer; answers the waiters this satisfies. Returns what it stored.
    pub(crate) fn set(
        &mut self,
        uid: &PodUid,
        status: Result<Arc<PodStatus>, Arc<CriError>>,
        at: Instant,
    ) -> Option<CachedStatus> {
        if self.pods.get(uid).is_some_and(|e| e.modified > at) {
            return None;
        }
        let (status, error) = match status {
            Ok(s) => (s, None),
            Err(e) => (Arc::new(PodStatus::default()), Some(e)),
        };
        let data = CachedStatus {
            status,
            error,
            modified: Some(at),
        };
        self.pods.insert(
            uid.clone(),
            Entry {
                data: data.clone(),
                modified: at,
            },
        );
        self.notify(uid);
        Some(data)
    }

    pub(crate) fn delete(&mut self, uid: &PodUid) {
        self.pods.remove(uid);
    }

    /// Every pod's data is at least as fresh as `t`: answers every waiter it satisfies.
    pub(crate) fn update_time(&mut self, t: Instant) {
        if self.timestamp.is_some_and(|old| old >= t) {
            return;
        }
        self.timestamp = Some(t);
        let uids: Vec<PodUid> = self.waiters.keys().cloned().collect();
        for uid in uids {
            self.notify(&uid);
        }
    }

    /// Answers at once if data meeting `need` is held, otherwise keeps `reply` until a
    /// `set` or `update_time` makes it so.
    pub(crate) fn subscribe(
        &mut self,
        uid: &PodUid,
        need: impl Into<Need>,
        reply: oneshot::Sender<CachedStatus>,
    ) {
        let need = need.into();
        if let Some(d) = self.newer_than(uid, &need) {
            let _ = reply.send(d);
            return;
        }
        self.next_seq += 1;
        self.waiters.entry(uid.clone()).or_default().push(Waiter {
            need,
            seq: self.next_seq,
            reply,
        });
    }

    /// Answers the waiters for `uid` that are now satisfied, oldest request time first
    /// (ties in arrival order); drops the ones whose askers have gone away.
    fn notify(&mut self, uid: &PodUid) {
        let Some(mut list) = self.waiters.remove(uid) else {
            return;
        };
        list.retain(|w| !w.reply.is_closed());
        list.sort_by_key(|w| (w.need.min, w.seq));
        let mut keep = Vec::new();
        for w in list {
            match self.newer_than(uid, &w.need) {
                Some(d) => {
                    #[cfg(test)]
                    self.answered.push((w.need.min, w.seq));
                    let _ = w.reply.send(d);
                }
                None => keep.push(w),
            }
        }
        if !keep.is_empty() {
            self.waiters.insert(uid.clone(), keep);
        }
    }

    /// Forgets waiters whose askers have gone away (so abandoned waits never pile up).
    pub(crate) fn prune(&mut self) {
        self.waiters.retain(|_, list| {
            list.retain(|w| !w.reply.is_closed());
            !list.is_empty()
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.pods.len()
    }

    pub(crate) fn timestamp(&self) -> Option<Instant> {
        self.timestamp
    }

    /// Waiting subscribers per pod UID.
    pub(crate) fn waiting(&self) -> BTreeMap<PodUid, usize> {
        self.waiters
            .iter()
            .map(|(k, v)| (k.clone(), v.len()))
            .collect()
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
