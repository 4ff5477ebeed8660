//! The taint eviction scheduler's state, as a plain struct the actor wraps (and tests drive
//! on paused tokio time): this node's NoExecute taints, the pods bound to it, and one
//! deadline per pod in one delay queue. Every change recomputes the deadlines it touches
//! (a node change: every pod's; a pod change: its own) and moves, sets or cancels the
//! pod's timer; a timer that fires is checked against the state once more before it is
//! handed out.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use podvisor_actors::due::DueQueue;
use podvisor_core::pod::MIRROR_ANNOTATION;
use podvisor_core::{ObjectKey, PodExt, PodUid};
use tokio::time::Instant;

use super::deadline::{self, Deadline, TimedTaint};
use crate::clock::WallClock;

/// What the scheduler keeps of a pod.
#[derive(Debug, Clone)]
pub struct PodView {
    pub uid: PodUid,
    pub tolerations: Vec<Toleration>,
    /// A static pod's mirror: never evicted (its manifest file is the truth).
    pub mirror: bool,
    /// Already being deleted: nothing left to do.
    pub deleting: bool,
}

impl PodView {
    pub fn of(pod: &Pod) -> Option<(ObjectKey, PodView)> {
        let uid = PodUid::from(pod.metadata.uid.as_deref()?);
        let mirror = pod
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION));
        let view = PodView {
            uid,
            tolerations: pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default(),
            mirror,
            deleting: pod.metadata.deletion_timestamp.is_some(),
        };
        Some((ObjectKey::pod(pod.namespace(), pod.name()), view))
    }
}

/// A timer that fired and still stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Evict this pod (after a last look at the store).
    Evict {
        key: ObjectKey,
        uid: PodUid,
        cause: String,
    },
    /// A static pod would be evicted; say so, once.
    WouldEvictStatic {
        key: ObjectKey,
        uid: PodUid,
        cause: String,
    },
}

pub struct Scheduler {
    clock: WallClock,
    taints: Vec<TimedTaint>,
    /// When each taint without a `timeAdded` was first seen (the store stamps every
    /// NoExecute taint, so this only covers a client that wrote its own without one).
    first_seen: HashMap<(String, Option<String>), u64>,
    pods: HashMap<ObjectKey, PodView>,
    queue: DueQueue<ObjectKey>,
    /// Static pods already reported as not evicted.
    reported: HashSet<PodUid>,
}

impl Scheduler {
    pub fn new(clock: WallClock) -> Self {
        Self {
            clock,
            taints: Vec::new(),
            first_seen: HashMap::new(),
            pods: HashMap::new(),
            queue: DueQueue::new(),
            reported: HashSet::new(),
        }
    }

    pub fn clock(&self) -> &WallClock {
        &self.clock
    }

    pub fn queue(&mut self) -> &mut DueQueue<ObjectKey> {
        &mut self.queue
    }

    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.next_deadline()
    }

    pub fn pod(&self, key: &ObjectKey) -> Option<&PodView> {
        self.pods.get(key)
    }

    /// The node's NoExecute taints, each with its start, from the node's taints.
    pub fn timed(&mut self, taints: &[Taint]) -> Vec<TimedTaint> {
        let now = self.clock.now_ms();
        let seen = &mut self.first_seen;
        deadline::no_execute(taints, |t| {
            *seen.entry((t.key.clone(), t.value.clone())).or_insert(now)
        })
    }

    /// The node changed (or is gone: no taints). Answers the pods whose countdown was
    /// cancelled.
    pub fn set_node(&mut self, node: Option<&Node>) -> Vec<ObjectKey> {
        let taints = node
            .and_then(|n| n.spec.as_ref())
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        self.taints = self.timed(&taints);
        let keys: Vec<ObjectKey> = self.pods.keys().cloned().collect();
        keys.into_iter().filter(|k| self.refresh(k)).collect()
    }

    /// Every pod, as a full list says: those not in it are forgotten. Answers the pods
    /// whose countdown was cancelled.
    pub fn reset_pods(&mut self, pods: Vec<(ObjectKey, PodView)>) -> Vec<ObjectKey> {
        let keep: HashSet<&ObjectKey> = pods.iter().map(|(k, _)| k).collect();
        let gone: Vec<ObjectKey> = self
            .pods
            .keys()
            .filter(|k| !keep.contains(k))
            .cloned()
            .collect();
        for k in &gone {
            self.remove_pod(k);
        }
        pods.into_iter()
            .filter_map(|(k, v)| self.set_pod(k.clone(), v).then_some(k))
            .collect()
    }

    /// One pod added or changed. Whether a pending countdown was cancelled.
    pub fn set_pod(&mut self, key: ObjectKey, view: PodView) -> bool {
        self.pods.insert(key.clone(), view);
        self.refresh(&key)
    }

    pub fn remove_pod(&mut self, key: &ObjectKey) {
        if let Some(v) = self.pods.remove(key) {
            self.reported.remove(&v.uid);
        }
        self.queue.cancel(key);
    }

    /// The pod's deadline now, from the current taints and its tolerations.
    pub fn deadline(&self, key: &ObjectKey) -> Deadline {
        match self.pods.get(key) {
            Some(p) if !p.deleting => deadline::deadline(&self.taints, &p.tolerations),
            _ => Deadline::Never,
        }
    }

    /// Sets, moves or cancels the pod's timer. Whether a timer was cancelled.
    fn refresh(&mut self, key: &ObjectKey) -> bool {
        match self.deadline(key).ms() {
            Some(ms) => {
                let at = self.clock.instant(ms);
                self.queue.schedule(key.clone(), at);
                false
            }
            None => {
                if let Some(p) = self.pods.get(key) {
                    self.reported.remove(&p.uid);
                }
                let was = self.queue.cancel(key);
                was && self.pods.get(key).is_some_and(|p| !p.mirror && !p.deleting)
            }
        }
    }

    /// A timer fired for `key`: what to do, if its deadline still stands. A deadline
    /// further than the longest timer re-arms instead.
    pub fn fired(&mut self, key: ObjectKey) -> Option<Due> {
        let d = self.deadline(&key);
        let (ms, cause) = match d {
            Deadline::Never => return None,
            Deadline::At { ms, cause } => (ms, cause),
        };
        if ms > self.clock.now_ms() {
            let at = self.clock.instant(ms);
            self.queue.schedule(key, at);
            return None;
        }
        let p = self.pods.get(&key)?;
        let uid = p.uid.clone();
        if !p.mirror {
            return Some(Due::Evict { key, uid, cause });
        }
        self.reported
            .insert(uid.clone())
            .then_some(Due::WouldEvictStatic { key, uid, cause })
    }

    /// Reads wall time from `clock` from now on, and sets every timer again by it.
    pub fn reanchor(&mut self, clock: WallClock) {
        self.clock = clock;
        let keys: Vec<ObjectKey> = self.pods.keys().cloned().collect();
        for k in keys {
            if self.queue.contains(&k) {
                self.refresh(&k);
            }
        }
    }

    /// Tries `key` again after `delay` (an eviction that failed).
    pub fn retry(&mut self, key: ObjectKey, delay: Duration) {
        if self.pods.contains_key(&key) {
            self.queue.schedule_earliest(key, Instant::now() + delay);
        }
    }

    /// Arms the timer for `key` at wall time `ms` (the last look found it later).
    pub fn schedule_at(&mut self, key: ObjectKey, ms: u64) {
        let at = self.clock.instant(ms);
        self.queue.schedule(key, at);
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
