//! Every probe of the node in one scheduler (the kubelet's prober manager, as plain data
//! an actor owns): the pods' probes, one deadline each in one [`DueQueue`], a bounded
//! number of runs at once ([`Limits`]: exec probes, which the runtime carries out, have a
//! bound of their own), and what their results mean for the pod ([`Effect`]s). The actor
//! runs what [`Probes::due`] hands it and reports back through [`Probes::finish`]; every
//! rule is here, tested on paused time.
//!
//! Timing: an instance's first probe is due `initialDelaySeconds` after it started (for a
//! container that was running before this scheduler started, at a spread-out moment
//! within one period instead, so a restart does not probe everything at once); then
//! every `periodSeconds` on that cadence; a run that overruns its period is followed by
//! the next at once. Liveness and readiness wait for a startup probe to succeed.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::DueQueue;
use podvisor_actors::histogram::{Histogram, HistogramSnapshot, LatencySummary};
use podvisor_core::{PodExt, PodUid, SharedPod};
use podvisor_cri::{ContainerState, PodStatus};
use serde::Serialize;
use tokio::time::Instant;

use crate::action::Action;
use crate::spec::{ProbeKind, ProbeSpec};
use crate::worker::Worker;

/// One probe: pod, container, kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProbeKey {
    pub uid: PodUid,
    pub container: Arc<str>,
    pub kind: ProbeKind,
}

/// A run to start now.
#[derive(Debug, Clone)]
pub struct Run {
    pub key: ProbeKey,
    pub action: Action,
    pub container_id: String,
    pub pod_ip: String,
    pub timeout: Duration,
}

/// A readiness or startup verdict on a container instance changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub uid: PodUid,
    pub container: String,
    pub container_id: String,
    pub kind: ProbeKind,
    pub passed: bool,
}

/// What the actor does with a run's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Tell the status manager.
    Result(ProbeResult),
    /// Sync the pod now (a container failed its liveness or startup probe, or a startup
    /// probe decided: the next init container may start).
    Sync(PodUid),
    /// A Warning event on the pod (`Unhealthy`, `ProbeWarning`).
    Event {
        pod: SharedPod,
        reason: &'static str,
        message: String,
    },
}

/// A container instance that must be killed because a probe failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub container: String,
    pub kind: ProbeKind,
    /// The probe's own grace period, if it has one.
    pub grace_seconds: Option<i64>,
}

/// What the probes know of a pod's containers, for its sync.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// Running instances (by container ID) whose liveness or startup probe failed.
    pub failed: HashMap<String, Failed>,
    /// Instances whose startup probe succeeded.
    pub started: std::collections::HashSet<String>,
}

/// What the debug endpoint shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbesSummary {
    pub pods: usize,
    pub probes: usize,
    pub scheduled: usize,
    pub in_flight: usize,
    pub exec_in_flight: usize,
    /// Due, waiting for a free slot.
    pub waiting: usize,
    pub runs: u64,
    pub failures: u64,
    pub errors: u64,
    /// How long after its due time each run started.
    pub lateness: LatencySummary,
    /// The same, bucket by bucket (two snapshots tell how late runs were in between).
    pub lateness_histogram: HistogramSnapshot,
}

struct PodEntry {
    pod: SharedPod,
    status: Option<Arc<PodStatus>>,
    /// Liveness and startup probes have stopped: the pod is terminating.
    terminating: bool,
    workers: BTreeMap<(Arc<str>, ProbeKind), Worker>,
}

impl PodEntry {
    /// Where network probes go: the pod's IP; the node's loopback for a host-network
    /// pod, which listens on the node's addresses; nowhere (empty) while a pod of its own
    /// network has no IP known yet, rather than the node's loopback.
    fn ip(&self) -> String {
        if self.pod.host_network() {
            return "127.0.0.1".to_string();
        }
        let ip = self.status.as_ref().and_then(|s| s.ips.first());
        ip.cloned().unwrap_or_default()
    }

    /// Whether a startup probe of `container` still holds this probe back.
    fn gated(&self, container: &Arc<str>, kind: ProbeKind) -> bool {
        kind != ProbeKind::Startup
            && self
                .workers
                .get(&(container.clone(), ProbeKind::Startup))
                .is_some_and(|s| s.verdict != Some(true))
    }
}

/// How many probes run at once, at most: in all, and of those exec probes (each one a
/// process the runtime starts in a container: the runtime's CPU is what they cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub total: usize,
    pub exec: usize,
}

pub struct Probes {
    pods: HashMap<PodUid, PodEntry>,
    queue: DueQueue<ProbeKey>,
    /// Due network probes (httpGet, tcpSocket, grpc) and exec probes waiting for a slot.
    waiting: VecDeque<ProbeKey>,
    waiting_exec: VecDeque<ProbeKey>,
    /// Runs under way, and whether each is an exec.
    running: HashMap<ProbeKey, bool>,
    exec_running: usize,
    limits: Limits,
    /// Wall-clock nanoseconds when this scheduler started: containers started well before
    /// were running before it, and their first probes are spread out.
    epoch: i64,
    lateness: Histogram,
    runs: u64,
    failures: u64,
    errors: u64,
}

/// Containers started this long before the scheduler are "already running".
const OLD: i64 = 10_000_000_000;

/// A stable moment within `period` for `key`, so a restart spreads its first probes.
fn jitter(key: &ProbeKey, period: Duration) -> Duration {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    period.mul_f64((h.finish() % 1000) as f64 / 1000.0)
}

fn specs(pod: &SharedPod, terminating: bool) -> Vec<(Arc<str>, ProbeSpec)> {
    let sidecars = pod
        .init_containers()
        .iter()
        .filter(|c| podvisor_core::restart::is_sidecar(c));
    let mut out = Vec::new();
    for c in pod.containers().iter().chain(sidecars) {
        for kind in ProbeKind::ALL {
            if terminating && kind != ProbeKind::Readiness {
                continue;
            }
            if let Some(Ok(spec)) = ProbeSpec::of(kind, c) {
                out.push((Arc::from(c.name.as_str()), spec));
            }
        }
    }
    out
}

impl Probes {
    /// `wall_now`: the wall clock (nanoseconds).
    pub fn new(limits: Limits, wall_now: i64) -> Self {
        Self {
            pods: HashMap::new(),
            queue: DueQueue::new(),
            waiting: VecDeque::new(),
            waiting_exec: VecDeque::new(),
            running: HashMap::new(),
            exec_running: 0,
            limits: Limits {
                total: limits.total.max(1),
                exec: limits.exec.max(1),
            },
            epoch: wall_now,
            lateness: Histogram::default(),
            runs: 0,
            failures: 0,
            errors: 0,
        }
    }

    pub fn queue(&mut self) -> &mut DueQueue<ProbeKey> {
        &mut self.queue
    }

    /// The pod as it is now (its probes follow its spec); a pod being deleted keeps only
    /// its readiness probes. Whether the scheduler still needs the pod's runtime status
    /// (it has probes, and no status arrived yet).
    pub fn set_pod(&mut self, pod: SharedPod, now: Instant, wall: i64) -> bool {
        let uid = pod.uid().clone();
        let entry = self.pods.entry(uid.clone()).or_insert_with(|| PodEntry {
            pod: pod.clone(),
            status: None,
            terminating: false,
            workers: BTreeMap::new(),
        });
        entry.terminating |= pod.is_deleted();
        entry.pod = pod;
        let wanted: BTreeMap<_, _> = specs(&entry.pod, entry.terminating)
            .into_iter()
            .map(|(c, s)| ((c, s.kind), s))
            .collect();
        let gone: Vec<_> = entry
            .workers
            .iter()
            .filter(|(k, w)| wanted.get(*k) != Some(&w.spec))
            .map(|(k, _)| k.clone())
            .collect();
        for (container, kind) in gone {
            entry.workers.remove(&(container.clone(), kind));
            self.queue.cancel(&ProbeKey {
                uid: uid.clone(),
                container,
                kind,
            });
        }
        for (k, spec) in wanted {
            entry.workers.entry(k).or_insert_with(|| Worker::new(spec));
        }
        let wants_status = entry.status.is_none() && !entry.workers.is_empty();
        self.observe(&uid, now, wall);
        wants_status
    }

    /// The pod started terminating: its liveness and startup probes stop (a container
    /// must not be restarted while it is being stopped); readiness goes on.
    pub fn stop_liveness_and_startup(&mut self, uid: &PodUid, now: Instant, wall: i64) {
        if let Some(e) = self.pods.get(uid) {
            let pod = e.pod.clone();
            self.pods.get_mut(uid).expect("just found").terminating = true;
            let _ = self.set_pod(pod, now, wall);
        }
    }

    /// The pod is gone (terminated, or no longer wanted): no more probes.
    pub fn remove(&mut self, uid: &PodUid) {
        let Some(entry) = self.pods.remove(uid) else {
            return;
        };
        for (container, kind) in entry.workers.into_keys() {
            self.queue.cancel(&ProbeKey {
                uid: uid.clone(),
                container,
                kind,
            });
        }
    }

    /// Forgets every pod not in `keep`.
    pub fn retain(&mut self, keep: &std::collections::HashSet<PodUid>) {
        let stale: Vec<PodUid> = self
            .pods
            .keys()
            .filter(|u| !keep.contains(*u))
            .cloned()
            .collect();
        for uid in stale {
            self.remove(&uid);
        }
    }

    /// The runtime's view of the pod changed: new instances start their probes, stopped
    /// ones end them.
    pub fn set_status(&mut self, uid: &PodUid, status: Arc<PodStatus>, now: Instant, wall: i64) {
        if let Some(e) = self.pods.get_mut(uid) {
            e.status = Some(status);
            self.observe(uid, now, wall);
        }
    }

    /// Matches every worker of the pod with its container's newest instance.
    fn observe(&mut self, uid: &PodUid, now: Instant, wall: i64) {
        let Some(e) = self.pods.get_mut(uid) else {
            return;
        };
        let Some(status) = e.status.clone() else {
            return;
        };
        let mut start = Vec::new();
        for ((container, kind), w) in &mut e.workers {
            let key = ProbeKey {
                uid: uid.clone(),
                container: container.clone(),
                kind: *kind,
            };
            let Some(c) = status.container(container) else {
                continue;
            };
            let running = c.state == ContainerState::Running;
            let new = w.observe(&c.id, running);
            if !w.active() {
                self.queue.cancel(&key);
            } else if new || (w.due.is_none() && !w.in_flight) {
                start.push((key, c.started_at));
            }
        }
        for (key, started_at) in start {
            self.schedule_first(key, started_at, now, wall);
        }
    }

    /// The first run of an instance's probe (unless a startup probe holds it back).
    fn schedule_first(&mut self, key: ProbeKey, started_at: i64, now: Instant, wall: i64) {
        let Some(e) = self.pods.get_mut(&key.uid) else {
            return;
        };
        if e.gated(&key.container, key.kind) {
            return;
        }
        let Some(w) = e.workers.get_mut(&(key.container.clone(), key.kind)) else {
            return;
        };
        let at = if started_at < self.epoch - OLD {
            now + jitter(&key, w.spec.period)
        } else {
            let since = Duration::from_nanos(wall.saturating_sub(started_at).max(0).unsigned_abs());
            now + w.spec.initial_delay.saturating_sub(since)
        };
        w.due = Some(at);
        self.queue.schedule(key, at);
    }
}

#[path = "probes_run.rs"]
mod run;
