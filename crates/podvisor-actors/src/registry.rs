//! Every live actor, with its place in the supervision tree. Supervisors register their
//! children when they first start them and deregister them when they are gone for good;
//! the debug endpoint reads snapshots.
//!
//! The registry reads mailboxes directly (atomics and a short lock), never by messaging
//! actors: an actor that is stuck is exactly the one an operator needs to see.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;

use crate::histogram::HistogramSnapshot;
use crate::id::ActorId;
use crate::mailbox::{MailboxSnapshot, Probe};

#[derive(Clone)]
struct Entry {
    parent: Option<ActorId>,
    probe: Arc<dyn Probe>,
}

#[derive(Default)]
pub struct Registry {
    entries: RwLock<BTreeMap<ActorId, Entry>>,
    /// What actors gone for good had counted, per kind: `/metrics` counters must never go
    /// down when pod workers come and go.
    retired: Mutex<BTreeMap<&'static str, KindTotals>>,
}

/// One actor as the debug endpoint shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActorSnapshot {
    pub id: ActorId,
    pub kind: &'static str,
    /// The actor's key within its kind (a pod UID for pod workers).
    pub key: Option<String>,
    pub parent: Option<ActorId>,
    /// Distance from the root of its tree (0 for the root supervisor).
    pub depth: usize,
    pub mailbox: MailboxSnapshot,
    pub state: Option<serde_json::Value>,
}

/// A page of the tree in depth-first order (parents before children, siblings by id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeSnapshot {
    pub total: usize,
    pub offset: usize,
    pub actors: Vec<ActorSnapshot>,
    /// More actors exist past this page.
    pub truncated: bool,
}

/// Per-kind totals for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct KindTotals {
    pub actors: u64,
    pub queued: u64,
    pub handled: u64,
    pub restarts: u64,
    pub rejected: u64,
    pub handle_time: HistogramSnapshot,
}

impl KindTotals {
    fn add_counts(&mut self, s: &MailboxSnapshot, handle_time: &HistogramSnapshot) {
        self.handled += s.handled;
        self.restarts += s.restarts;
        self.rejected += s.rejected;
        self.handle_time.add(handle_time);
    }
}

impl Registry {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn register(&self, probe: Arc<dyn Probe>, parent: Option<ActorId>) {
        let id = probe.id().clone();
        self.write().insert(id, Entry { parent, probe });
    }

    /// The actor is gone for good: its counts stay in the per-kind totals.
    pub fn deregister(&self, id: &ActorId) {
        let Some(e) = self.write().remove(id) else {
            return;
        };
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        let t = retired.entry(e.probe.kind()).or_default();
        t.add_counts(&e.probe.snapshot(), &e.probe.handle_time());
    }

    /// The actor is down but its mailbox (with its counts) will be registered again by a
    /// restarted supervisor: nothing is retired, or it would be counted twice.
    pub fn deregister_for_restart(&self, id: &ActorId) {
        self.write().remove(id);
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.read().contains_key(&ActorId::from(id))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<ActorId, Entry>> {
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<ActorId, Entry>> {
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }

    fn snapshot_of(id: &ActorId, e: &Entry, depth: usize) -> ActorSnapshot {
        ActorSnapshot {
            id: id.clone(),
            kind: e.probe.kind(),
            // Ids are `kind/key`: the key is not stored twice (every pod worker pays for
            // what the registry keeps).
            key: id
                .as_str()
                .strip_prefix(e.probe.kind())
                .and_then(|rest| rest.strip_prefix('/'))
                .map(String::from),
            parent: e.parent.clone(),
            depth,
            mailbox: e.probe.snapshot(),
            state: e.probe.summary(),
        }
    }

    pub fn get(&self, id: &str) -> Option<ActorSnapshot> {
        let entries = self.read();
        let id = ActorId::from(id);
        let e = entries.get(&id)?;
        let mut depth = 0;
        let mut parent = e.parent.clone();
        while let Some(p) = parent {
            depth += 1;
            parent = entries.get(&p).and_then(|e| e.parent.clone());
        }
        Some(Self::snapshot_of(&id, e, depth))
    }

    /// Up to `limit` actors starting at `offset`, in depth-first tree order. Entries whose
    /// parent is not registered count as roots, so nothing is ever hidden.
    pub fn tree(&self, offset: usize, limit: usize) -> TreeSnapshot {
        let entries: Vec<(ActorId, Entry)> = self
            .read()
            .iter()
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect();
        let known: std::collections::HashSet<&ActorId> = entries.iter().map(|(id, _)| id).collect();
        let mut children: BTreeMap<Option<&ActorId>, Vec<usize>> = BTreeMap::new();
        for (i, (_, e)) in entries.iter().enumerate() {
            let parent = e.parent.as_ref().filter(|p| known.contains(p));
            children.entry(parent).or_default().push(i);
        }
        let mut order = Vec::with_capacity(entries.len());
        let mut stack: Vec<(usize, usize)> = children
            .get(&None)
            .map(|roots| roots.iter().rev().map(|&i| (i, 0)).collect())
            .unwrap_or_default();
        while let Some((i, depth)) = stack.pop() {
            order.push((i, depth));
            if let Some(kids) = children.get(&Some(&entries[i].0)) {
                stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
            }
        }
        let total = order.len();
        let actors: Vec<ActorSnapshot> = order
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(i, depth)| Self::snapshot_of(&entries[i].0, &entries[i].1, depth))
            .collect();
        TreeSnapshot {
            truncated: offset + actors.len() < total,
            total,
            offset,
            actors,
        }
    }

    /// Live actors and queued messages of the actors there are now; handled, restarts,
    /// rejected and handling times of every actor there ever was.
    pub fn totals_by_kind(&self) -> BTreeMap<&'static str, KindTotals> {
        let mut out = self
            .retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for e in self.read().values() {
            let s = e.probe.snapshot();
            let t = out.entry(e.probe.kind()).or_default();
            t.actors += 1;
            t.queued += s.queued as u64;
            t.add_counts(&s, &e.probe.handle_time());
        }
        out
    }

    /// Makes the named actor panic. `false` if no such actor.
    #[cfg(feature = "fault-injection")]
    pub fn inject_panic(&self, id: &str, reason: &str) -> bool {
        match self.read().get(&ActorId::from(id)) {
            Some(e) => {
                e.probe.inject_panic(reason);
                true
            }
            None => false,
        }
    }
}
