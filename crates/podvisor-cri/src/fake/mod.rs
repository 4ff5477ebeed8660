//! An in-memory [`Runtime`] for unit tests. It follows containerd's rules where the kubelet
//! logic depends on them (name reservation, a stop that kills, remove that stops first,
//! images that must be present) and lets a test script what containers do
//! ([`Program`]), slow any call down, make calls fail, and read back every call made.
//!
//! Time comes from tokio's clock, so tests with paused time control exits and delays
//! exactly. It is a test double, never a proof that a feature works: every behaviour is
//! also tested against containerd.

mod listing;
mod resources;
mod runtime;
mod state;
mod usage;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

pub use state::{Program, SIGKILL_EXIT, SIGTERM_EXIT};

use crate::error::CriError;
use crate::model::*;
use crate::proto::{ContainerConfig, PodSandboxConfig};
use crate::runtime::{EventStream, Runtime};
use state::State;

/// The runtime calls a test can delay, fail or count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Version,
    Conditions,
    ListPods,
    /// An inspection of one pod with a listing of its own.
    PodStatus,
    /// An inspection of one pod by status calls alone, from a listing's ids. Delays and
    /// failures set for [`Op::PodStatus`] apply to it too: both are inspections.
    PodStatusListed,
    RunSandbox,
    StopSandbox,
    RemoveSandbox,
    SandboxStatus,
    CreateContainer,
    StartContainer,
    StopContainer,
    RemoveContainer,
    ContainerStatus,
    UpdateContainerResources,
    ReopenContainerLog,
    ImageStatus,
    PullImage,
    ListImages,
    RemoveImage,
    ExecSync,
    ContainerUsage,
    SandboxUsage,
    ImageFs,
    Events,
}

impl Op {
    /// The operation whose delays and failures apply to this one.
    fn faults_as(self) -> Op {
        match self {
            Op::PodStatusListed => Op::PodStatus,
            op => op,
        }
    }
}

/// One recorded call: the operation and the object it named (pod UID, sandbox or
/// container id, image), so tests can assert exact call sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub op: Op,
    pub target: String,
}

struct Inner {
    state: State,
    delays: BTreeMap<Op, Duration>,
    /// Delays of one call on one target (a pod UID, a container ID), before `delays`.
    target_delays: BTreeMap<(Op, String), Duration>,
    failures: BTreeMap<Op, VecDeque<CriError>>,
    calls: Vec<Call>,
    events: Option<broadcast::Sender<Result<ContainerEvent, CriError>>>,
    /// Events still to be lost (`lose_events`).
    lose_events: std::cell::Cell<usize>,
    /// Whether events carry their sandbox's statuses (`without_event_snapshots`).
    event_snapshots: std::cell::Cell<bool>,
    last_ts: i64,
}

/// Cheap to clone; clones share one runtime.
#[derive(Clone)]
pub struct FakeRuntime {
    inner: Arc<Mutex<Inner>>,
    epoch: Instant,
}

impl Default for FakeRuntime {
    fn default() -> Self {
        Self::new()
    }
}

/// Wall-clock base of the fake's timestamps (2026-01-01T00:00:00Z), so they look like
/// CRI's nanoseconds since the epoch.
const BASE_NANOS: i64 = 1_767_225_600_000_000_000;

impl FakeRuntime {
    /// A runtime with the test images present and no event stream (like containerd 1.6).
    pub fn new() -> Self {
        let mut state = State::default();
        state.images.insert(crate::sample::TEST_IMAGE.to_string());
        Self {
            inner: Arc::new(Mutex::new(Inner {
                state,
                delays: BTreeMap::new(),
                target_delays: BTreeMap::new(),
                failures: BTreeMap::new(),
                calls: Vec::new(),
                events: None,
                lose_events: std::cell::Cell::new(0),
                event_snapshots: std::cell::Cell::new(true),
                last_ts: 0,
            })),
            epoch: Instant::now(),
        }
    }

    /// Makes `container_events` stream events (like containerd 1.7+).
    pub fn with_event_stream(self) -> Self {
        self.lock().events = Some(broadcast::channel(1024).0);
        self
    }

    /// Events no longer carry their sandbox's statuses (a runtime that sends only ids).
    pub fn without_event_snapshots(self) -> Self {
        self.lock().event_snapshots.set(false);
        self
    }

    /// Every open event stream yields `error` (and stays open: `end_event_streams` ends
    /// them), as a runtime whose stream breaks.
    pub fn fail_event_streams(&self, error: CriError) {
        if let Some(tx) = &self.lock().events {
            let _ = tx.send(Err(error));
        }
    }

    /// The next `n` events reach no stream, as when another subscriber shares the runtime's
    /// one event channel (containerd 1.7, containerd#7318) or its buffer overflows.
    pub fn lose_events(&self, n: usize) {
        self.lock().lose_events.set(n);
    }

    /// Ends every open event stream (later `container_events` calls open new ones).
    pub fn end_event_streams(&self) {
        let mut inner = self.lock();
        if inner.events.is_some() {
            inner.events = Some(broadcast::channel(1024).0);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock has failed already; keep going so
        // its cleanup can still read the state.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Monotonic nanosecond timestamps: tokio time (pausable) plus strictly increasing, so
    /// "newest first" orderings are never ties.
    fn now(&self, inner: &mut Inner) -> i64 {
        let elapsed = Instant::now().duration_since(self.epoch).as_nanos() as i64;
        inner.last_ts = (BASE_NANOS + elapsed).max(inner.last_ts + 1);
        inner.last_ts
    }

    /// What containers named `container_name` do once started (default: run forever).
    pub fn set_program(&self, container_name: &str, program: Program) {
        self.lock()
            .state
            .programs
            .insert(container_name.to_string(), program);
    }

    pub fn add_image(&self, image: &str) {
        self.lock().state.images.insert(image.to_string());
    }

    /// Lets `pull_image(image)` succeed (others fail like an unreachable registry).
    pub fn allow_pull(&self, image: &str) {
        self.lock().state.pullable.insert(image.to_string());
    }

    /// Lets `pull_image(image)` succeed only with `username`'s credentials.
    pub fn allow_pull_as(&self, image: &str, username: &str) {
        let mut inner = self.lock();
        inner.state.pullable.insert(image.to_string());
        inner
            .state
            .logins
            .insert(image.to_string(), username.to_string());
    }

    pub fn set_delay(&self, op: Op, delay: Duration) {
        self.lock().delays.insert(op, delay);
    }

    /// Delays only the calls of `op` on `target` (a pod that hangs the runtime); `None`
    /// takes the delay back for later calls.
    pub fn set_target_delay(&self, op: Op, target: &str, delay: Option<Duration>) {
        let mut inner = self.lock();
        let key = (op, target.to_string());
        match delay {
            Some(d) => inner.target_delays.insert(key, d),
            None => inner.target_delays.remove(&key),
        };
    }

    /// The next call of `op` fails with `error` (queue several for several failures).
    pub fn fail_next(&self, op: Op, error: CriError) {
        self.lock().failures.entry(op).or_default().push_back(error);
    }

    /// The pods inspected, in order, however inspected ([`Op::PodStatus`] or
    /// [`Op::PodStatusListed`]).
    pub fn inspections(&self) -> Vec<String> {
        let inner = self.lock();
        let of = |c: &&Call| matches!(c.op, Op::PodStatus | Op::PodStatusListed);
        inner
            .calls
            .iter()
            .filter(of)
            .map(|c| c.target.clone())
            .collect()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    pub fn calls_of(&self, op: Op) -> Vec<String> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.op == op)
            .map(|c| c.target.clone())
            .collect()
    }

    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// Makes a running container exit now with `code`, as if its process ended.
    pub fn exit_container(&self, id: &str, code: i32) {
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        if inner.state.exit(id, code, "Error", now) {
            emit(&inner, id, ContainerEventKind::Stopped, now);
        }
    }

    /// What `exec_sync` in running container `id` exits with from now on (a probe that
    /// starts failing, or recovers).
    pub fn set_exec_exit(&self, id: &str, exit_code: i32) {
        if let Some(c) = self.lock().state.containers.get_mut(id) {
            c.program.exec.exit_code = exit_code;
        }
    }

    /// Removes a container behind the agent's back (as `crictl rm` would).
    pub fn remove_container_externally(&self, id: &str) {
        let mut inner = self.lock();
        let now = self.now(&mut inner);
        let _ = inner.state.remove_container(id, now);
    }

    /// Records the call, applies its delay and any injected failure.
    async fn enter(&self, op: Op, target: &str) -> Result<(), CriError> {
        let delay = {
            let mut inner = self.lock();
            inner.calls.push(Call {
                op,
                target: target.to_string(),
            });
            let key = (op.faults_as(), target.to_string());
            inner
                .target_delays
                .get(&key)
                .or_else(|| inner.delays.get(&op.faults_as()))
                .copied()
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        match self
            .lock()
            .failures
            .get_mut(&op.faults_as())
            .and_then(VecDeque::pop_front)
        {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Exits the container when its program says so, unless something else ended it first.
    fn schedule_exit(&self, id: &str, program: &Program) {
        let Some(after) = program.exits_after else {
            return;
        };
        let weak: Weak<Mutex<Inner>> = Arc::downgrade(&self.inner);
        let epoch = self.epoch;
        let (id, code) = (id.to_string(), program.exit_code);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(inner) = weak.upgrade() {
                FakeRuntime { inner, epoch }.exit_container(&id, code);
            }
        });
    }
}

fn emit(inner: &Inner, container_id: &str, kind: ContainerEventKind, at: i64) {
    if let Some(tx) = &inner.events {
        if inner.lose_events.get() > 0 {
            inner.lose_events.set(inner.lose_events.get() - 1);
            return;
        }
        let sandbox = inner
            .state
            .containers
            .get(container_id)
            .and_then(|c| inner.state.sandboxes.get(&c.sandbox_id));
        let snapshot = sandbox.filter(|_| inner.event_snapshots.get()).map(|s| {
            // A deleted container has left the runtime before its event is made.
            let gone = (kind == ContainerEventKind::Deleted).then_some(container_id);
            Box::new(inner.state.sandbox_snapshot(&s.status.id, gone))
        });
        let _ = tx.send(Ok(ContainerEvent {
            container_id: container_id.to_string(),
            kind,
            created_at: at,
            pod: sandbox.map(|s| s.status.pod.clone()),
            pod_labels: sandbox.map(|s| s.status.labels.clone()).unwrap_or_default(),
            snapshot,
        }));
    }
}

fn fake_image(name: &str) -> Image {
    Image {
        id: format!("sha256:{:064x}", name.len()),
        repo_tags: vec![name.to_string()],
        repo_digests: Vec::new(),
        size: 1,
        pinned: false,
        user: ImageUser::Uid(0),
    }
}

#[cfg(test)]
mod tests;
