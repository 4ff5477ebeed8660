//! The kubelet's rule for static pods: pods with one namespace and name (an edited
//! manifest gives a new UID under the same name) never run at the same time. The first in
//! arrival order whose termination was not requested runs; the others wait until it is
//! gone.

use std::collections::HashMap;

use podvisor_core::{ObjectKey, PodUid};

use super::status::PodSyncStatus;

#[derive(Default)]
pub(crate) struct StaticGate {
    /// The pod allowed to run, per key.
    started: HashMap<ObjectKey, PodUid>,
    /// Those waiting, in arrival order.
    waiting: HashMap<ObjectKey, Vec<PodUid>>,
}

impl StaticGate {
    pub(crate) fn arrive(&mut self, key: &ObjectKey, uid: &PodUid) {
        self.waiting
            .entry(key.clone())
            .or_default()
            .push(uid.clone());
    }

    /// Whether `uid` may start now; if so it is the one started under its key.
    pub(crate) fn allow(
        &mut self,
        key: &ObjectKey,
        uid: &PodUid,
        pods: &HashMap<PodUid, Box<PodSyncStatus>>,
    ) -> bool {
        if let Some(started) = self.started.get(key) {
            return started == uid;
        }
        let waiting = self.waiting.entry(key.clone()).or_default();
        waiting.retain(|w| pods.get(w).is_some_and(|s| !s.termination_requested()));
        match waiting.first() {
            Some(first) if first != uid => return false,
            Some(_) => {
                waiting.remove(0);
            }
            None => {}
        }
        if waiting.is_empty() {
            self.waiting.remove(key);
        }
        self.started.insert(key.clone(), uid.clone());
        true
    }

    pub(crate) fn forget_waiting(&mut self, key: &ObjectKey, uid: &PodUid) {
        if let Some(w) = self.waiting.get_mut(key) {
            w.retain(|x| x != uid);
            if w.is_empty() {
                self.waiting.remove(key);
            }
        }
    }

    /// `uid` is done: whether it was the one started under `key` (then the next may start).
    pub(crate) fn release(&mut self, key: &ObjectKey, uid: &PodUid) -> bool {
        if self.started.get(key) == Some(uid) {
            self.started.remove(key);
            return true;
        }
        false
    }

    /// The first waiting pod with an update to run.
    pub(crate) fn next(
        &self,
        key: &ObjectKey,
        pods: &HashMap<PodUid, Box<PodSyncStatus>>,
    ) -> Option<PodUid> {
        self.waiting
            .get(key)?
            .iter()
            .find(|u| {
                pods.get(*u)
                    .is_some_and(|s| s.pending.is_some() && !s.working)
            })
            .cloned()
    }
}
