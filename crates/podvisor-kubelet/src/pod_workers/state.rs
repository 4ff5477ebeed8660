//! The pod workers' decisions (the kubelet's `UpdatePod` and `managePodLoop` rules) as a
//! plain state machine. The dispatcher actor feeds it updates and work reports and carries
//! out the [`Effect`]s it returns; tests drive it directly.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use super::pod;
use super::queue::WorkQueue;
use super::status::{Pending, PodSyncStatus, effective_grace_period};
use super::types::*;

/// What the dispatcher must do after a decision.
#[derive(Debug)]
pub enum Effect {
    /// Hand this work to the pod's worker (creating the worker if needed).
    Deliver(PodWork),
    /// Cancel the pod's sync in flight: newer work is waiting.
    Cancel(String),
    /// The pod's worker has nothing left to do.
    StopWorker(String),
}

#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Next sync after a successful one.
    pub resync_interval: Duration,
    /// Next attempt after a failed one.
    pub backoff: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            resync_interval: Duration::from_secs(10),
            backoff: Duration::from_secs(10),
        }
    }
}

#[derive(Default)]
pub struct PodWorkersState {
    pods: HashMap<String, PodSyncStatus>,
    /// Static pods by full name: the one allowed to run, and those waiting, in arrival
    /// order.
    started_static: HashMap<String, String>,
    waiting_static: HashMap<String, Vec<String>>,
    /// `sync_known_pods` has run: from now on unknown UIDs are known not to run.
    pods_synced: bool,
    queue: WorkQueue,
    timings: Timings,
}

/// Delivery numbers are unique in the process, so a report about work delivered by an
/// earlier dispatcher instance never matches work delivered by this one.
fn next_delivery() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn fire(kill: Option<KillPodOptions>) {
    if let Some(tx) = kill.and_then(|k| k.completed) {
        let _ = tx.send(());
    }
}

impl PodWorkersState {
    pub fn new(timings: Timings) -> Self {
        Self {
            timings,
            ..Default::default()
        }
    }

    pub fn status(&self, uid: &str) -> Option<&PodSyncStatus> {
        self.pods.get(uid)
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    pub fn uids(&self) -> impl Iterator<Item = &String> {
        self.pods.keys()
    }

    /// A pod seen for the first time in a terminal phase may be done already: whether it is
    /// depends on the cached runtime status, which the caller must look up first.
    pub fn needs_cached_status(&self, opts: &UpdatePodOptions) -> bool {
        opts.pod
            .as_ref()
            .is_some_and(|p| pod::is_terminal_phase(p) && !self.pods.contains_key(pod::uid(p)))
    }

    /// Until the first `sync_known_pods`, a pod nobody told us about may still be running.
    pub fn could_have_running_containers(&self, uid: &str) -> bool {
        match self.pods.get(uid) {
            Some(s) => !s.terminated(),
            None => !self.pods_synced,
        }
    }

    /// The pods due for a sync, for the caller to send it. Runtime-only pods are in no
    /// config, so nobody would send them anything: a due one (its kill failed) gets its
    /// kill again here, as the returned effects.
    pub fn drain_due(&mut self, now: Instant) -> (Vec<String>, Vec<Effect>) {
        let due = self.queue.drain_due(now);
        let mut effects = Vec::new();
        for uid in &due {
            let Some(s) = self.pods.get_mut(uid) else {
                continue;
            };
            let runtime_only = s.current.as_ref().is_some_and(|c| c.running_pod.is_some());
            if runtime_only && !s.working && !s.finished {
                if s.pending.is_none() {
                    s.pending = s.current.clone();
                }
                effects.extend(self.deliver(uid, now));
            }
        }
        (due, effects)
    }

    /// The kubelet's `UpdatePod`. `cached_terminal`: for a pod seen for the first time in
    /// a terminal phase, whether the runtime status cache shows nothing running.
    pub fn update_pod(
        &mut self,
        opts: UpdatePodOptions,
        cached_terminal: Option<bool>,
        now: Instant,
    ) -> Vec<Effect> {
        let update_type = opts.update_type.unwrap_or(UpdateType::Sync);
        let mut kill = opts.kill;
        let (pod, running_pod, runtime_only) = match (opts.pod, opts.running_pod) {
            (Some(p), _) => (p, None, false),
            (None, Some(r)) if update_type == UpdateType::Kill => {
                (Arc::new(pod::from_runtime(&r.0.pod)), Some(r), true)
            }
            (None, Some(r)) => {
                debug!(pod_uid = %r.0.pod.uid, "update ignored: runtime-only pods can only be killed");
                fire(kill);
                return Vec::new();
            }
            (None, None) => {
                fire(kill);
                return Vec::new();
            }
        };
        let uid = pod::uid(&pod).to_string();

        if !self.pods.contains_key(&uid) {
            let mut status = PodSyncStatus::new(&pod, now);
            if !runtime_only && pod::is_terminal_phase(&pod) && cached_terminal == Some(true) {
                // Done before we ever saw it: nothing to start, nothing to stop. Not a
                // restart request either: this update is the one that found it done.
                status.terminating_at = Some(now);
                status.terminated_at = Some(now);
                status.finished = true;
                self.pods.insert(uid, status);
                fire(kill);
                return Vec::new();
            }
            if status.is_static && !status.finished {
                self.waiting_static
                    .entry(status.full_name.clone())
                    .or_default()
                    .push(uid.clone());
            }
            self.pods.insert(uid.clone(), status);
        }
        let status = self.pods.get_mut(&uid).expect("inserted above");

        // Two pods with one UID in quick succession (a static pod edited back and forth):
        // let the first finish, then the sync loop may add the second.
        if status.termination_requested() && update_type == UpdateType::Create {
            status.restart_requested = true;
            fire(kill);
            return Vec::new();
        }
        if status.finished {
            fire(kill);
            return Vec::new();
        }

        let mut became_terminating = false;
        if !status.termination_requested() {
            if runtime_only || pod::is_deleted(&pod) {
                status.deleted = true;
                became_terminating = true;
            } else if pod::is_terminal_phase(&pod) {
                became_terminating = true;
            } else if update_type == UpdateType::Kill {
                status.evicted = kill.as_ref().is_some_and(|k| k.evict);
                became_terminating = true;
            }
            if became_terminating {
                status.terminating_at = Some(now);
            }
        }

        let mut grace_shortened = false;
        match status.kind_now() {
            WorkKind::Terminated => {
                if runtime_only {
                    // Housekeeping saw an older runtime view; the worker is finishing up.
                    fire(kill);
                    return Vec::new();
                }
                fire(kill.take());
            }
            WorkKind::Terminating => {
                if let Some(k) = kill.as_mut() {
                    status.absorb_kill(k);
                }
                let (grace, shortened) = effective_grace_period(status, &pod, kill.as_ref());
                status.grace_period = grace;
                grace_shortened = shortened;
            }
            WorkKind::Sync => fire(kill.take()),
        }

        let start_time = match (&status.pending, opts.start_time) {
            (Some(p), Some(t)) => Some(p.start_time.map_or(t, |s| s.min(t))),
            (Some(p), None) => p.start_time,
            (None, t) => t,
        };
        status.pending = Some(Pending {
            update_type,
            pod,
            running_pod,
            start_time,
        });
        if status.working {
            if became_terminating || grace_shortened {
                return vec![Effect::Cancel(uid)];
            }
            return Vec::new();
        }
        self.deliver(&uid, now)
    }

    /// Hands the pod's pending update to its worker, unless it has none, or is a static pod
    /// that must wait for another with the same full name.
    fn deliver(&mut self, uid: &str, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        let Some(update) = status.pending.take() else {
            status.working = false;
            return Vec::new();
        };
        if !status.started {
            if status.is_static {
                if status.termination_requested() {
                    // Never started: nothing ran, so nothing to stop.
                    status.terminated_at.get_or_insert(now);
                    status.finished = true;
                    status.working = false;
                    status.notify_terminated();
                    let name = status.full_name.clone();
                    self.forget_waiting(&name, uid);
                    let mut effects = vec![Effect::StopWorker(uid.to_string())];
                    effects.extend(self.start_next_static(&name, now));
                    return effects;
                }
                let name = status.full_name.clone();
                if !self.allow_static_start(&name, uid) {
                    let status = self.pods.get_mut(uid).expect("checked above");
                    status.pending = Some(update);
                    status.working = false;
                    self.queue.enqueue(uid, now, self.timings.backoff);
                    return Vec::new();
                }
            }
            self.pods.get_mut(uid).expect("checked above").started = true;
        }
        let seq = next_delivery();
        let status = self.pods.get_mut(uid).expect("checked above");
        let work = status.work(&update, seq);
        status.current = Some(update);
        status.current_seq = seq;
        status.current_kind = work.kind;
        status.working = true;
        vec![Effect::Deliver(work)]
    }

    /// The kubelet's rule: the first in arrival order whose termination was not requested
    /// runs; the others wait until it is gone.
    fn allow_static_start(&mut self, full_name: &str, uid: &str) -> bool {
        if let Some(started) = self.started_static.get(full_name) {
            return started == uid;
        }
        let pods = &self.pods;
        let waiting = self
            .waiting_static
            .entry(full_name.to_string())
            .or_default();
        waiting.retain(|w| {
            pods.get(w)
                .is_some_and(|s| !s.termination_requested() && !s.terminated())
        });
        match waiting.first() {
            Some(first) if first != uid => return false,
            Some(_) => {
                waiting.remove(0);
            }
            None => {}
        }
        if waiting.is_empty() {
            self.waiting_static.remove(full_name);
        }
        self.started_static
            .insert(full_name.to_string(), uid.to_string());
        true
    }

    fn forget_waiting(&mut self, full_name: &str, uid: &str) {
        if let Some(w) = self.waiting_static.get_mut(full_name) {
            w.retain(|x| x != uid);
            if w.is_empty() {
                self.waiting_static.remove(full_name);
            }
        }
    }

    /// A static pod with this full name is done: let the next one in line start now
    /// rather than at its next retry.
    fn start_next_static(&mut self, full_name: &str, now: Instant) -> Vec<Effect> {
        let Some(next) = self.waiting_static.get(full_name).and_then(|w| {
            w.iter()
                .find(|u| {
                    self.pods
                        .get(*u)
                        .is_some_and(|s| s.pending.is_some() && !s.working)
                })
                .cloned()
        }) else {
            return Vec::new();
        };
        self.queue.forget(&next);
        self.deliver(&next, now)
    }

    fn release_static(&mut self, uid: &str) -> Option<String> {
        let name = self.pods.get(uid)?.full_name.clone();
        if self.started_static.get(&name).is_some_and(|s| s == uid) {
            self.started_static.remove(&name);
            return Some(name);
        }
        None
    }

    /// Whether `seq` is the work the pod's worker is running now (not a late report of
    /// work that was redelivered since).
    pub fn is_current_work(&self, uid: &str, seq: u64) -> bool {
        self.pods
            .get(uid)
            .is_some_and(|s| s.working && s.current_seq == seq)
    }

    /// A worker reports how the work `seq` ended.
    pub fn work_done(
        &mut self,
        uid: &str,
        seq: u64,
        result: WorkResult,
        now: Instant,
    ) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if !(status.working && status.current_seq == seq) {
            return Vec::new(); // a report for work that was redelivered since
        }
        let kind = status.current_kind;
        status.last_result = Some((kind, result.clone()));
        match result {
            WorkResult::Cancelled => {}
            WorkResult::Failed(_) => self.queue.enqueue(uid, now, self.timings.backoff),
            WorkResult::Ok(outcome) => match kind {
                WorkKind::Terminated => return self.finish(uid, now),
                WorkKind::Terminating => {
                    let runtime_only = status
                        .current
                        .as_ref()
                        .is_some_and(|c| c.running_pod.is_some());
                    status.terminated_at = Some(now);
                    status.notify_terminated();
                    if runtime_only {
                        // Not in any config: no terminated sync, garbage collection does the rest.
                        return self.finish(uid, now);
                    }
                    if status.pending.is_none() {
                        status.pending = status.current.clone();
                    }
                    self.queue.enqueue(uid, now, self.timings.resync_interval);
                }
                WorkKind::Sync => {
                    if outcome.terminal && !status.termination_requested() {
                        status.terminating_at = Some(now);
                        if let Some(current) = status.current.clone() {
                            status.grace_period =
                                effective_grace_period(status, &current.pod, None).0;
                            if status.pending.is_none() {
                                status.pending = Some(current);
                            }
                        }
                    }
                    self.queue.enqueue(uid, now, self.timings.resync_interval);
                }
            },
        }
        self.deliver(uid, now)
    }

    fn finish(&mut self, uid: &str, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        status.terminated_at.get_or_insert(now);
        status.finished = true;
        status.working = false;
        status.pending = None;
        status.notify_terminated();
        self.queue.forget(uid);
        let mut effects = vec![Effect::StopWorker(uid.to_string())];
        if let Some(name) = self.release_static(uid) {
            effects.extend(self.start_next_static(&name, now));
        }
        effects
    }

    /// A worker crashed and restarted: the work it was running is lost, so it gets the
    /// newest update again.
    pub fn worker_restarted(&mut self, uid: &str, now: Instant) -> Vec<Effect> {
        let Some(status) = self.pods.get_mut(uid) else {
            return Vec::new();
        };
        if !status.working {
            return Vec::new();
        }
        if status.pending.is_none() {
            status.pending = status.current.clone();
        }
        status.working = false;
        self.deliver(uid, now)
    }

    /// Forgets finished pods that are no longer desired (or whose UID was requested again)
    /// and reports every known pod's state.
    pub fn sync_known_pods(
        &mut self,
        desired: &HashSet<String>,
    ) -> (BTreeMap<String, PodWorkerState>, Vec<Effect>) {
        self.pods_synced = true;
        let mut states = BTreeMap::new();
        let mut effects = Vec::new();
        let forget: Vec<String> = self
            .pods
            .iter()
            .filter(|(uid, s)| s.finished && (!desired.contains(*uid) || s.restart_requested))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in forget {
            let restart = self.pods.get(&uid).is_some_and(|s| s.restart_requested);
            states.insert(
                uid.clone(),
                if restart {
                    PodWorkerState::TerminatedAndRecreated
                } else {
                    PodWorkerState::Terminated
                },
            );
            self.release_static(&uid);
            if let Some(s) = self.pods.remove(&uid) {
                self.forget_waiting(&s.full_name, &uid);
            }
            self.queue.forget(&uid);
            effects.push(Effect::StopWorker(uid));
        }
        for (uid, s) in &self.pods {
            let state = if s.terminated() {
                PodWorkerState::Terminated
            } else if s.termination_requested() {
                PodWorkerState::Terminating
            } else {
                PodWorkerState::Syncing
            };
            states.insert(uid.clone(), state);
        }
        (states, effects)
    }
}
