//! The uplink's bookkeeping as plain data: what each pod owes the cluster, what is in
//! flight, and what waits out a backoff.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podvisor_client::WatchEvent;
use podvisor_machinery::reflector::Update;

use crate::cluster::first_copies::FirstCopies;
use crate::podset::is_mirror;
use crate::status::shared::SharedStatuses;

pub(crate) type Key = (String, String);

/// Writes to the cluster at once, at most.
pub(crate) const IN_FLIGHT: usize = 8;

/// Times a pod's first status write refused as Forbidden is retried on its own, soon,
/// before it counts as a failure (`Uplink::retry_soon`).
pub(crate) const LAG_RETRIES: u8 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deletion {
    /// The node started deleting the pod: delete it in the cluster with this grace.
    Graceful(i64),
    /// The node has finished the pod and removed it: remove it from the cluster.
    Finished,
}

/// What the uplink keeps of a pod: which incarnation, whether the node is deleting it,
/// and its status. Not the pod: the spec is the store's, and a decoded pod kept here for
/// each pod (10 KB with its status) was a fifth of a 500-pod node's heap.
#[derive(Debug, PartialEq)]
pub(crate) struct Seen {
    pub uid: String,
    /// The grace the node deletes it with, once it does.
    pub deleting: Option<i64>,
    /// Shared with the entry's `pushed` once written: one copy while nothing changes.
    pub status: Option<Arc<PodStatus>>,
}

impl Seen {
    /// `p` as the uplink keeps it, its status one of the `known` copies or the one the
    /// status manager published (`shared`) when equal.
    fn of(p: &Pod, known: &[&Arc<PodStatus>], shared: &SharedStatuses) -> Self {
        let m = &p.metadata;
        let uid = m.uid.clone().unwrap_or_default();
        let status = p.status.as_ref().map(|s| {
            let same = known.iter().copied().find(|k| ***k == *s).cloned();
            let same = same.or_else(|| shared.same(&uid, s));
            same.unwrap_or_else(|| Arc::new(s.clone()))
        });
        let deleting = m.deletion_timestamp.as_ref();
        Self {
            uid,
            deleting: deleting.map(|_| m.deletion_grace_period_seconds.unwrap_or(0)),
            status,
        }
    }
}

/// One pod's due work.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub key: Key,
    pub pod: Arc<Seen>,
    pub status: bool,
    /// The status this node last wrote for this incarnation, or the cluster's own in its
    /// first copy: the cluster's, as far as the node knows, so the next write is a patch
    /// from it without a read first.
    pub base: Option<Arc<PodStatus>>,
    pub deletion: Option<Deletion>,
    /// Nothing of this incarnation written yet: a refusal as Forbidden may be the Node
    /// authorizer's lag (`Uplink::retry_soon`), not a pod that is no longer the node's.
    pub first: bool,
}

struct Entry {
    pod: Arc<Seen>,
    pushed: Option<Arc<PodStatus>>,
    /// A write of this incarnation went through.
    written: bool,
    deletion_sent: bool,
    gone: bool,
    /// First writes refused as Forbidden and retried soon (`retry_soon`).
    lag_retries: u8,
}

/// What is due, as a plain struct.
#[derive(Default)]
pub(crate) struct Uplink {
    entries: BTreeMap<Key, Entry>,
    dirty: BTreeSet<Key>,
    pub(super) in_flight: BTreeSet<Key>,
    /// Failed work waiting out the backoff: not started again until `unpark`, so pods
    /// the cluster keeps refusing cannot take every slot from fresh statuses.
    parked: BTreeSet<Key>,
    shared: SharedStatuses,
    first_copies: FirstCopies,
}

fn key(p: &Pod) -> Key {
    let m = &p.metadata;
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

impl Uplink {
    /// Nothing due yet; statuses equal to those in `shared` are kept as those copies, and
    /// a new pod's status the cluster had in its first copy (`first_copies`) is not owed.
    pub(crate) fn sharing(shared: SharedStatuses, first_copies: FirstCopies) -> Self {
        Self {
            shared,
            first_copies,
            ..Self::default()
        }
    }

    pub(crate) fn observe(&mut self, update: Update<Pod>) {
        match update {
            Update::Reset(items) => {
                self.entries.retain(|_, e| e.gone);
                for p in items {
                    self.seen(p);
                }
            }
            Update::Change(WatchEvent::Added(p) | WatchEvent::Modified(p)) => self.seen(p),
            Update::Change(WatchEvent::Deleted(p)) => self.removed(&p),
            Update::Change(WatchEvent::Bookmark(_)) => {}
        }
    }

    fn seen(&mut self, p: Arc<Pod>) {
        if is_mirror(&p) {
            return;
        }
        let k = key(&p);
        match self.entries.get_mut(&k) {
            Some(e) if Some(&e.pod.uid) == p.metadata.uid.as_ref() => {
                let known: Vec<_> = e.pushed.iter().chain(&e.pod.status).collect();
                e.pod = Arc::new(Seen::of(&p, &known, &self.shared));
            }
            _ => {
                let uid = p.metadata.uid.as_deref().unwrap_or_default();
                let cluster = self.first_copies.take(uid);
                let pod = Arc::new(Seen::of(
                    &p,
                    &cluster.iter().collect::<Vec<_>>(),
                    &self.shared,
                ));
                // The cluster's own status, as the replica copied it: nothing owed yet.
                let same =
                    |c: &Arc<PodStatus>| pod.status.as_ref().is_some_and(|s| Arc::ptr_eq(s, c));
                let e = Entry {
                    pushed: cluster.filter(same),
                    pod,
                    written: false,
                    deletion_sent: false,
                    gone: false,
                    lag_retries: 0,
                };
                self.entries.insert(k.clone(), e);
            }
        }
        self.dirty.insert(k);
    }

    /// Removed from the store: finished by the node when it was being deleted, else
    /// forgotten because the cluster no longer has it (nothing to write then).
    fn removed(&mut self, p: &Arc<Pod>) {
        let k = key(p);
        if p.metadata.deletion_timestamp.is_none() || is_mirror(p) {
            self.entries.remove(&k);
            return;
        }
        let e = self.entries.entry(k.clone()).or_insert_with(|| Entry {
            pod: Arc::new(Seen::of(p, &[], &self.shared)),
            pushed: None,
            written: false,
            deletion_sent: false,
            gone: true,
            lag_retries: 0,
        });
        let known: Vec<_> = e.pushed.iter().chain(&e.pod.status).collect();
        e.pod = Arc::new(Seen::of(p, &known, &self.shared));
        e.gone = true;
        self.dirty.insert(k);
    }

    /// Work to start now: at most `room` pods, none already in flight.
    pub(crate) fn next(&mut self, room: usize) -> Vec<Job> {
        let mut jobs = Vec::new();
        let keys: Vec<Key> = self
            .dirty
            .iter()
            .filter(|k| !self.in_flight.contains(*k) && !self.parked.contains(*k))
            .cloned()
            .collect();
        for k in keys {
            if jobs.len() >= room {
                break;
            }
            self.dirty.remove(&k);
            let Some(e) = self.entries.get(&k) else {
                continue;
            };
            let status = e.pushed.as_ref() != e.pod.status.as_ref();
            let deletion = if e.gone {
                Some(Deletion::Finished)
            } else {
                let due = e.pod.deleting.filter(|_| !e.deletion_sent);
                due.map(Deletion::Graceful)
            };
            if status || deletion.is_some() {
                self.in_flight.insert(k.clone());
                jobs.push(Job {
                    key: k,
                    pod: e.pod.clone(),
                    status,
                    base: e.pushed.clone(),
                    deletion,
                    first: !e.written,
                });
            }
        }
        jobs
    }

    /// A job's outcome: done work is remembered, failed work is due again.
    pub(crate) fn done(&mut self, job: &Job, ok: bool) {
        self.in_flight.remove(&job.key);
        let Some(e) = self.entries.get_mut(&job.key) else {
            return;
        };
        if e.pod.uid != job.pod.uid {
            self.dirty.insert(job.key.clone());
            return;
        }
        if !ok {
            self.dirty.insert(job.key.clone());
            self.parked.insert(job.key.clone());
            return;
        }
        if job.deletion == Some(Deletion::Finished) {
            self.entries.remove(&job.key);
            return;
        }
        e.pushed = job.pod.status.clone();
        e.written = true;
        e.deletion_sent |= job.deletion.is_some();
        if !Arc::ptr_eq(&e.pod, &job.pod) {
            self.dirty.insert(job.key.clone());
        }
    }

    /// The backoff ran out: failed work may start again.
    pub(crate) fn unpark(&mut self) {
        self.parked.clear();
    }

    /// A pod's first status write was refused as Forbidden: the cluster's Node authorizer
    /// learns that a pod is bound here from its own watch, a few milliseconds after the
    /// node's. Parks the pod for a short wait of its own (`unpark_one`) and answers true,
    /// at most `LAG_RETRIES` times; after that (or for any other write) it changes nothing
    /// and the refusal is an ordinary failure.
    pub(crate) fn retry_soon(&mut self, job: &Job) -> bool {
        let Some(e) = self.entries.get_mut(&job.key) else {
            return false;
        };
        let first = job.first && job.deletion.is_none() && job.status;
        let same = e.pod.uid == job.pod.uid;
        if !first || !same || e.lag_retries >= LAG_RETRIES {
            return false;
        }
        e.lag_retries += 1;
        self.in_flight.remove(&job.key);
        self.dirty.insert(job.key.clone());
        self.parked.insert(job.key.clone());
        true
    }

    /// A pod's short wait after `retry_soon` ended.
    pub(crate) fn unpark_one(&mut self, key: &Key) {
        self.parked.remove(key);
    }

    pub(crate) fn due(&self) -> usize {
        self.dirty.len() + self.in_flight.len()
    }
}
