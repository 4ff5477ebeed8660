//! The pod workers' state machine, case by case from the kubelet's `UpdatePod` and
//! `managePodLoop`, driven without actors: a simulated worker pool takes the delivered
//! work and reports on it when the test says so.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus as ApiPodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::sync::oneshot;
use tokio::time::Instant;

use podvisor_core::pod::CONFIG_SOURCE_ANNOTATION;
use podvisor_core::{GracePeriod, PodUid, SharedPod};

use super::*;
use crate::protocol::sync::SyncError;
use crate::protocol::sync::SyncOutcome;
use crate::protocol::updates::{
    KillPodOptions, PodWorkerState, RuntimePod, UpdatePodOptions, UpdateType,
};
use crate::protocol::work::{PodWork, WorkKind, WorkResult};

fn shared(p: Pod) -> SharedPod {
    SharedPod::new(p).unwrap()
}

fn uid(u: &str) -> PodUid {
    PodUid::from(u)
}

/// A failed sync, as a worker reports it.
fn failed(why: &str) -> WorkResult {
    WorkResult::failed(SyncError::Other(why.into()))
}

fn pod(uid: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.into());
    p.metadata.name = Some(format!("pod-{uid}"));
    p.metadata.namespace = Some("default".into());
    p.spec = Some(PodSpec {
        termination_grace_period_seconds: Some(30),
        ..Default::default()
    });
    p
}

fn named(uid: &str, name: &str) -> Pod {
    let mut p = pod(uid);
    p.metadata.name = Some(name.into());
    p
}

fn static_pod(uid: &str, name: &str) -> Pod {
    let mut p = named(uid, name);
    p.metadata.annotations =
        Some([(CONFIG_SOURCE_ANNOTATION.to_string(), "file".to_string())].into());
    p
}

fn deleted(mut p: Pod, grace: i64) -> Pod {
    p.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    p.metadata.deletion_grace_period_seconds = Some(grace);
    p
}

fn phase(mut p: Pod, phase: &str) -> Pod {
    p.status = Some(ApiPodStatus {
        phase: Some(phase.into()),
        ..Default::default()
    });
    p
}

fn labelled(mut p: Pod, v: &str) -> Pod {
    p.metadata.labels = Some([("v".to_string(), v.to_string())].into());
    p
}

fn version(w: &PodWork) -> String {
    w.pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("v").cloned())
        .unwrap_or_default()
}

fn create(p: Pod) -> UpdatePodOptions {
    UpdatePodOptions::new(UpdateType::Create, shared(p))
}

fn update(p: Pod) -> UpdatePodOptions {
    UpdatePodOptions::new(UpdateType::Update, shared(p))
}

fn kill(p: Pod, grace: Option<i64>) -> UpdatePodOptions {
    UpdatePodOptions::kill(
        shared(p),
        KillPodOptions {
            grace_period_override: grace.map(GracePeriod::from_seconds),
            ..Default::default()
        },
    )
}

fn runtime_pod(uid: &str) -> RuntimePod {
    RuntimePod::new(podvisor_cri::Pod {
        pod: podvisor_cri::PodRef {
            uid: uid.into(),
            name: format!("orphan-{uid}"),
            namespace: "default".into(),
        },
        ..Default::default()
    })
}

/// One delivered work item as the test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    kind: WorkKind,
    update: UpdateType,
    grace: Option<i64>,
    version: String,
}

fn call(kind: WorkKind, update: UpdateType) -> Call {
    Call {
        kind,
        update,
        grace: None,
        version: String::new(),
    }
}

fn terminating(update: UpdateType, grace: i64) -> Call {
    Call {
        kind: WorkKind::Terminating,
        update,
        grace: Some(grace),
        version: String::new(),
    }
}

struct Sim {
    s: PodWorkersState,
    now: Instant,
    calls: BTreeMap<String, Vec<Call>>,
    in_flight: HashMap<String, PodWork>,
    cancelled: Vec<String>,
    stopped: Vec<String>,
    finished: HashSet<String>,
    /// The spec version of each pod's last sync that succeeded.
    applied: HashMap<String, String>,
    /// Each pod's deadline, as the dispatcher's delay queue would hold it.
    due: HashMap<PodUid, Instant>,
}

impl Sim {
    fn new() -> Self {
        Self {
            s: PodWorkersState::new(Timings {
                resync_interval: Duration::from_secs(10),
                backoff: Duration::from_secs(1),
            }),
            now: Instant::now(),
            calls: BTreeMap::new(),
            in_flight: HashMap::new(),
            cancelled: Vec::new(),
            stopped: Vec::new(),
            finished: HashSet::new(),
            applied: HashMap::new(),
            due: HashMap::new(),
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for e in effects {
            match e {
                Effect::Deliver(work) => {
                    let uid = work.pod.uid().to_string();
                    assert!(
                        !self.in_flight.contains_key(&uid),
                        "two syncs in flight for {uid}"
                    );
                    assert!(!self.finished.contains(&uid), "work for finished pod {uid}");
                    self.calls.entry(uid.clone()).or_default().push(Call {
                        kind: work.kind,
                        update: work.update_type,
                        grace: work.grace_period.map(GracePeriod::seconds),
                        version: version(&work),
                    });
                    self.in_flight.insert(uid, work);
                }
                Effect::Cancel(uid) => self.cancelled.push(uid.to_string()),
                Effect::StopWorker(uid) => {
                    if self.s.status(&uid).is_some_and(|s| s.is_finished()) {
                        self.finished.insert(uid.to_string());
                    }
                    self.stopped.push(uid.to_string())
                }
                Effect::Schedule(uid, at) => {
                    self.due.insert(uid, at);
                }
                Effect::Unschedule(uid) => {
                    self.due.remove(&uid);
                }
            }
        }
    }

    fn send(&mut self, opts: UpdatePodOptions) {
        let effects = self.s.update_pod(opts, None, self.now);
        self.apply(effects);
    }

    fn send_cached(&mut self, opts: UpdatePodOptions, terminal: bool) {
        let effects = self.s.update_pod(opts, Some(terminal), self.now);
        self.apply(effects);
    }

    fn finish_with(&mut self, uid: &str, result: WorkResult) -> PodWork {
        let work = self
            .in_flight
            .remove(uid)
            .unwrap_or_else(|| panic!("nothing in flight for {uid}"));
        self.now += Duration::from_millis(10);
        if work.kind == WorkKind::Sync && matches!(result, WorkResult::Ok(_)) {
            self.applied.insert(uid.to_string(), version(&work));
        }
        let effects = self
            .s
            .work_done(&PodUid::from(uid), work.seq, result, self.now);
        self.apply(effects);
        work
    }

    fn ok(&mut self, uid: &str) -> PodWork {
        self.finish_with(uid, WorkResult::Ok(SyncOutcome::default()))
    }

    /// Completes everything until the pod is idle.
    fn drain(&mut self, uid: &str) {
        while self.in_flight.contains_key(uid) {
            self.ok(uid);
        }
    }

    /// `sync_known_pods`, as the sync loop's housekeeping calls it.
    fn sync_known(&mut self, desired: &[&str]) -> BTreeMap<String, PodWorkerState> {
        let desired: HashSet<PodUid> = desired.iter().map(|s| uid(s)).collect();
        let (states, effects) = self.s.sync_known_pods(&desired);
        self.apply(effects);
        let known: HashSet<String> = self.s.uids().map(|u| u.to_string()).collect();
        self.finished.retain(|u| known.contains(u));
        states
            .into_iter()
            .map(|(u, s)| (u.to_string(), s))
            .collect()
    }

    /// The dispatcher's delay queue at `at`: every pod whose deadline has come, soonest
    /// first, is handed to the state, which delivers its newest update again.
    fn drain_due(&mut self, at: Instant) -> Vec<String> {
        let mut due: Vec<(Instant, PodUid)> = self
            .due
            .iter()
            .filter(|(_, t)| **t <= at)
            .map(|(u, t)| (*t, u.clone()))
            .collect();
        due.sort();
        let mut out = Vec::new();
        for (_, u) in due {
            self.due.remove(&u);
            let effects = self.s.resync_due(&u, at);
            self.apply(effects);
            out.push(u.to_string());
        }
        out
    }

    fn calls(&self, uid: &str) -> Vec<Call> {
        self.calls.get(uid).cloned().unwrap_or_default()
    }

    fn kinds(&self, uid: &str) -> Vec<WorkKind> {
        self.calls(uid).into_iter().map(|c| c.kind).collect()
    }

    fn status(&self, uid: &str) -> &PodSyncStatus {
        self.s.status(uid).expect("known pod")
    }
}

use WorkKind::{Sync, Terminated, Terminating};

#[test]
fn first_sight_creates_the_status_and_delivers_a_sync() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    assert_eq!(sim.calls("u1"), [call(Sync, UpdateType::Create)]);
    let st = sim.status("u1");
    assert!(st.is_working() && !st.termination_requested() && st.has_started());
}

#[test]
fn a_pod_first_seen_terminal_with_a_terminal_cache_is_finished_without_syncing() {
    let mut sim = Sim::new();
    sim.send_cached(create(phase(pod("u1"), "Succeeded")), true);
    assert!(sim.calls("u1").is_empty(), "nothing to start or stop");
    let st = sim.status("u1");
    assert!(st.is_terminated() && st.is_finished());
    // The create that found it done is not a second pod with its UID: no restart is
    // requested, so housekeeping keeps it finished instead of forgetting and re-adding it
    // (then as a pod with no phase, which would run again) on every pass.
    assert!(!st.restart_requested());
    let states = sim.sync_known(&["u1"]);
    assert_eq!(states.get("u1"), Some(&PodWorkerState::Terminated));
    assert!(sim.s.status("u1").is_some(), "still known, still finished");
    // And it ignores everything after.
    sim.send(update(pod("u1")));
    sim.send(create(pod("u1")));
    assert!(sim.calls("u1").is_empty());
}

#[test]
fn a_pod_first_seen_terminal_whose_containers_still_run_is_torn_down() {
    let mut sim = Sim::new();
    sim.send_cached(create(phase(pod("u1"), "Failed")), false);
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Terminating, Terminated]);
    assert!(sim.status("u1").is_finished());
}

#[test]
fn a_create_for_a_terminating_uid_only_requests_a_restart() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), None));
    sim.send(create(labelled(pod("u1"), "second")));
    assert!(sim.status("u1").restart_requested());
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
    assert!(
        sim.calls("u1").iter().all(|c| c.version.is_empty()),
        "the second pod never ran"
    );
}

#[test]
fn a_finished_uid_ignores_updates_until_sync_known_pods_forgets_it() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), None));
    sim.drain("u1");
    assert!(sim.status("u1").is_finished());
    assert_eq!(sim.stopped, ["u1"], "the worker has nothing left to do");
    sim.send(update(pod("u1")));
    sim.send(kill(pod("u1"), None));
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
    let states = sim.sync_known(&[]);
    assert_eq!(states["u1"], PodWorkerState::Terminated);
    assert!(sim.s.status("u1").is_none(), "forgotten");
}

#[test]
fn a_deletion_timestamp_starts_termination() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(update(deleted(pod("u1"), 30)));
    assert_eq!(sim.status("u1").cause(), Some(Cause::Deleted));
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
}

#[test]
fn a_terminal_phase_starts_termination() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(update(phase(pod("u1"), "Succeeded")));
    assert_eq!(sim.status("u1").cause(), Some(Cause::Completed));
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
}

#[test]
fn a_kill_starts_termination_and_an_eviction_is_recorded() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(UpdatePodOptions::kill(
        shared(pod("u1")),
        KillPodOptions {
            evict: true,
            ..Default::default()
        },
    ));
    assert_eq!(sim.status("u1").cause(), Some(Cause::Evicted));
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
}

#[test]
fn a_sync_that_finds_the_pod_terminal_moves_it_to_terminating() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.finish_with(
        "u1",
        WorkResult::Ok(SyncOutcome {
            terminal: true,
            ..Default::default()
        }),
    );
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
    assert_eq!(sim.calls("u1")[1].grace, Some(30));
}

#[test]
fn a_runtime_only_pod_whose_kill_failed_is_killed_again_when_due() {
    let mut sim = Sim::new();
    sim.send(UpdatePodOptions::runtime_kill(runtime_pod("orphan")));
    sim.finish_with("orphan", failed("runtime down"));
    assert!(!sim.status("orphan").is_finished());
    // No config holds it, so nobody else would ever send it again.
    assert!(
        sim.drain_due(sim.now + Duration::from_millis(500))
            .is_empty()
    );
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(1)), ["orphan"]);
    assert_eq!(sim.kinds("orphan"), [Terminating, Terminating]);
    sim.ok("orphan");
    assert!(sim.status("orphan").is_finished());
    assert!(sim.drain_due(sim.now + Duration::from_secs(60)).is_empty());
    assert_eq!(sim.kinds("orphan"), [Terminating, Terminating]);
}

#[test]
fn runtime_only_pods_can_only_be_killed_and_skip_the_terminated_sync() {
    let mut sim = Sim::new();
    sim.send(UpdatePodOptions {
        update_type: Some(UpdateType::Sync),
        running_pod: Some(runtime_pod("orphan")),
        ..Default::default()
    });
    assert!(
        sim.s.status("orphan").is_none(),
        "a non-kill update is ignored"
    );
    sim.send(UpdatePodOptions::runtime_kill(runtime_pod("orphan")));
    assert_eq!(sim.status("orphan").cause(), Some(Cause::Orphaned));
    sim.drain("orphan");
    assert_eq!(sim.kinds("orphan"), [Terminating]);
    assert!(sim.status("orphan").is_finished());
    // A late kill from housekeeping's older view changes nothing.
    sim.send(UpdatePodOptions::runtime_kill(runtime_pod("orphan")));
    assert_eq!(sim.kinds("orphan"), [Terminating]);
}

#[test]
fn once_terminating_every_update_is_a_kill() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), Some(20)));
    sim.finish_with("u1", failed("stop timed out"));
    sim.send(update(labelled(pod("u1"), "new-spec")));
    let calls = sim.calls("u1");
    assert_eq!(
        calls[2].kind, Terminating,
        "a spec update of a terminating pod is a kill"
    );
    assert_eq!(calls[2].version, "new-spec");
    assert_eq!(
        calls[2].grace,
        Some(20),
        "the update did not restore the grace period"
    );
    // An update that arrives while the termination runs is not run as a second
    // termination: by the time it is delivered the pod is terminated.
    sim.send(update(labelled(pod("u1"), "newer")));
    sim.drain("u1");
    assert_eq!(
        sim.kinds("u1"),
        [Sync, Terminating, Terminating, Terminated]
    );
}

#[test]
fn a_deletion_grace_period_of_15s_is_carried_into_termination() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(update(deleted(pod("u1"), 15)));
    assert_eq!(
        sim.status("u1").grace_period(),
        Some(GracePeriod::from_seconds(15))
    );
    sim.drain("u1");
    assert_eq!(
        sim.calls("u1"),
        [
            call(Sync, UpdateType::Create),
            terminating(UpdateType::Update, 15),
            call(Terminated, UpdateType::Update),
        ]
    );
    let st = sim.status("u1");
    assert!(st.cause() == Some(Cause::Deleted) && st.is_finished());
}

#[test]
fn a_second_kill_with_a_longer_grace_is_ignored() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), Some(10)));
    // While the first termination is still running.
    assert!(sim.in_flight.contains_key("u1"));
    sim.send(kill(pod("u1"), Some(60)));
    assert!(
        sim.cancelled.is_empty(),
        "nothing shortened, nothing cancelled"
    );
    assert_eq!(
        sim.status("u1").grace_period(),
        Some(GracePeriod::from_seconds(10))
    );
    // It failed (the stop timed out): the retry keeps the shorter grace.
    sim.finish_with("u1", failed("stop timed out"));
    sim.send(kill(pod("u1"), Some(60)));
    sim.drain("u1");
    assert!(sim.cancelled.is_empty());
    let graces: Vec<Option<i64>> = sim.calls("u1").iter().map(|c| c.grace).collect();
    assert_eq!(graces, [None, Some(10), Some(10), None]);
    assert_eq!(
        sim.kinds("u1"),
        [Sync, Terminating, Terminating, Terminated]
    );
    assert!(sim.status("u1").is_finished());
}

#[test]
fn a_shorter_grace_cancels_and_restarts_termination() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), Some(30)));
    sim.send(kill(pod("u1"), Some(5)));
    assert_eq!(sim.cancelled, ["u1"]);
    sim.finish_with("u1", WorkResult::Cancelled);
    assert_eq!(sim.calls("u1")[2], terminating(UpdateType::Kill, 5));
    sim.drain("u1");
    assert_eq!(
        sim.kinds("u1"),
        [Sync, Terminating, Terminating, Terminated]
    );
}

#[test]
fn an_override_wins_when_shorter_and_zero_becomes_one_second() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    sim.send(kill(deleted(pod("u1"), 20), Some(0)));
    assert_eq!(sim.calls("u1")[1].grace, Some(1));
    // Without any override or deletion grace, the spec's applies.
    sim.send(create(pod("u2")));
    sim.ok("u2");
    sim.send(kill(pod("u2"), None));
    assert_eq!(sim.calls("u2")[1].grace, Some(30));
}

#[test]
fn becoming_terminating_cancels_the_sync_in_flight() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.send(kill(pod("u1"), None));
    assert_eq!(sim.cancelled, ["u1"]);
    // A cancelled sync is not an error: no backoff, the kill runs next.
    sim.finish_with("u1", WorkResult::Cancelled);
    assert!(sim.drain_due(sim.now + Duration::from_secs(5)).is_empty());
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
}

#[test]
fn rapid_updates_deliver_only_the_last() {
    let mut sim = Sim::new();
    sim.send(create(labelled(pod("u1"), "v0")));
    for v in 1..=5 {
        sim.send(update(labelled(pod("u1"), &format!("v{v}"))));
    }
    sim.drain("u1");
    let versions: Vec<String> = sim.calls("u1").into_iter().map(|c| c.version).collect();
    assert_eq!(versions, ["v0", "v5"]);
}

#[test]
fn create_kill_update_never_resurrects() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.send(kill(pod("u1"), None));
    sim.send(update(labelled(pod("u1"), "later")));
    sim.finish_with("u1", WorkResult::Cancelled);
    sim.drain("u1");
    assert_eq!(sim.kinds("u1"), [Sync, Terminating, Terminated]);
    sim.send(update(pod("u1")));
    assert_eq!(
        sim.kinds("u1"),
        [Sync, Terminating, Terminated],
        "no sync after termination"
    );
}

#[test]
fn a_kill_completion_fires_exactly_once_when_termination_is_done() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    let (tx, mut rx) = oneshot::channel();
    sim.send(UpdatePodOptions::kill(
        shared(pod("u1")),
        KillPodOptions {
            completed: Some(tx),
            ..Default::default()
        },
    ));
    assert!(rx.try_recv().is_err(), "not before the termination");
    sim.ok("u1"); // terminating done
    assert_eq!(rx.try_recv(), Ok(()));
    // A kill for a pod that is not terminating (a sync update) completes at once.
    let (tx, mut rx) = oneshot::channel();
    sim.send(UpdatePodOptions {
        kill: Some(KillPodOptions {
            completed: Some(tx),
            ..Default::default()
        }),
        ..update(pod("u2"))
    });
    assert_eq!(rx.try_recv(), Ok(()));
    // And for a finished pod, at once too.
    sim.drain("u1");
    let (tx, mut rx) = oneshot::channel();
    sim.send(UpdatePodOptions::kill(
        shared(pod("u1")),
        KillPodOptions {
            completed: Some(tx),
            ..Default::default()
        },
    ));
    assert_eq!(rx.try_recv(), Ok(()));
}

#[test]
fn status_functions_reach_the_terminating_sync_and_are_applied_once() {
    let applied = Arc::new(AtomicUsize::new(0));
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.ok("u1");
    let a = applied.clone();
    sim.send(UpdatePodOptions::kill(
        shared(pod("u1")),
        KillPodOptions {
            status_fn: Some(Arc::new(move |s: &mut ApiPodStatus| {
                a.fetch_add(1, Ordering::Relaxed);
                s.reason = Some("Evicted".into());
            })),
            ..Default::default()
        },
    ));
    // A fake terminating sync applies the functions it is given only when it succeeds.
    let apply_on_success = |sim: &mut Sim, result: WorkResult| {
        let work = sim.in_flight.get("u1").cloned().unwrap();
        let ok = matches!(result, WorkResult::Ok(_));
        sim.finish_with("u1", result);
        if ok {
            let mut st = ApiPodStatus::default();
            for f in &work.status_fns {
                f(&mut st);
            }
            assert_eq!(st.reason.as_deref(), Some("Evicted"));
        }
        work.status_fns.len()
    };
    assert_eq!(apply_on_success(&mut sim, failed("boom")), 1);
    // The retry (after the backoff, from the dispatcher's own queue) carries it again.
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(1)), ["u1"]);
    assert_eq!(
        apply_on_success(&mut sim, WorkResult::Ok(SyncOutcome::default())),
        1
    );
    assert_eq!(applied.load(Ordering::Relaxed), 1);
    // The terminated sync gets none.
    assert!(sim.in_flight["u1"].status_fns.is_empty());
}

#[test]
fn failures_back_off_and_successes_resync() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    sim.finish_with("u1", failed("image pull"));
    assert!(
        sim.drain_due(sim.now + Duration::from_millis(900))
            .is_empty()
    );
    // The retry is delivered by the state itself (no round trip through the sync loop).
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(1)), ["u1"]);
    assert_eq!(sim.calls("u1")[1], call(Sync, UpdateType::Sync));
    sim.ok("u1");
    // The resync interval (10 s here), jittered by up to half of it more.
    assert!(
        sim.drain_due(sim.now + Duration::from_millis(9_990))
            .is_empty()
    );
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(15)), ["u1"]);
    let st = sim.status("u1");
    assert!(matches!(
        st.last_result(),
        Some((WorkKind::Sync, WorkResult::Ok(_)))
    ));
}

#[test]
fn resyncs_of_pods_started_together_spread_over_half_an_interval() {
    let t = Timings {
        resync_interval: Duration::from_secs(60),
        backoff: Duration::from_secs(10),
    };
    let after: Vec<Duration> = (0..200)
        .map(|i| t.resync_after(&PodUid::from(format!("u{i}").as_str()), 1))
        .collect();
    assert!(
        after
            .iter()
            .all(|d| *d >= t.resync_interval && *d < Duration::from_secs(90))
    );
    let early = after
        .iter()
        .filter(|d| **d < Duration::from_secs(75))
        .count();
    assert!(
        (60..140).contains(&early),
        "{early} of 200 in the first half"
    );
    // The same pod and delivery: the same time.
    assert_eq!(t.resync_after(&PodUid::from("u1"), 1), after[1]);
}

#[test]
fn a_sync_that_waits_out_a_backoff_is_looked_at_again_when_it_ends() {
    let mut sim = Sim::new();
    sim.send(create(pod("u1")));
    let recheck = |secs| {
        WorkResult::Ok(SyncOutcome {
            changed: true,
            recheck_in: Some(Duration::from_secs(secs)),
            ..Default::default()
        })
    };
    sim.finish_with("u1", recheck(3));
    assert!(
        sim.drain_due(sim.now + Duration::from_millis(2_990))
            .is_empty()
    );
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(3)), ["u1"]);
    // A backoff that ends after the resync: the resync comes first.
    sim.finish_with("u1", recheck(300));
    assert_eq!(sim.drain_due(sim.now + Duration::from_secs(15)), ["u1"]);
}

#[test]
fn a_reused_uid_restarts_only_after_the_old_pod_finished() {
    let mut sim = Sim::new();
    sim.send(create(labelled(pod("u1"), "old")));
    sim.ok("u1");
    sim.send(kill(pod("u1"), None));
    sim.send(create(labelled(pod("u1"), "new")));
    // Still terminating: the sync loop is told to wait.
    let states = sim.sync_known(&["u1"]);
    assert_eq!(states["u1"], PodWorkerState::Terminating);
    sim.drain("u1");
    let states = sim.sync_known(&["u1"]);
    assert_eq!(states["u1"], PodWorkerState::TerminatedAndRecreated);
    // The sync loop adds it again: a fresh start.
    sim.send(create(labelled(pod("u1"), "new")));
    let calls = sim.calls("u1");
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.kind, c.version.as_str()))
            .collect::<Vec<_>>(),
        [
            (Sync, "old"),
            (Terminating, ""),
            (Terminated, ""),
            (Sync, "new")
        ]
    );
}

#[test]
fn static_pods_with_one_full_name_never_overlap_and_start_in_arrival_order() {
    let mut sim = Sim::new();
    sim.send(create(static_pod("a", "etcd")));
    sim.send(create(static_pod("b", "etcd")));
    sim.send(create(static_pod("c", "etcd")));
    sim.send(create(static_pod("x", "other")));
    assert_eq!(sim.kinds("a"), [Sync]);
    assert!(
        sim.calls("b").is_empty() && sim.calls("c").is_empty(),
        "b and c wait for a"
    );
    assert_eq!(sim.kinds("x"), [Sync], "another full name is independent");
    sim.ok("a");
    sim.send(kill(static_pod("a", "etcd"), None));
    sim.ok("a"); // terminating
    assert!(
        sim.calls("b").is_empty(),
        "not while a still has its terminated sync to run"
    );
    sim.ok("a"); // terminated: finished
    assert_eq!(sim.kinds("b"), [Sync], "b starts the moment a is done");
    assert!(sim.calls("c").is_empty());
}

#[test]
fn a_static_pod_killed_before_it_started_never_syncs() {
    let mut sim = Sim::new();
    sim.send(create(static_pod("a", "etcd")));
    sim.send(create(static_pod("b", "etcd")));
    let (tx, mut rx) = oneshot::channel();
    sim.send(UpdatePodOptions::kill(
        shared(static_pod("b", "etcd")),
        KillPodOptions {
            completed: Some(tx),
            ..Default::default()
        },
    ));
    assert!(sim.calls("b").is_empty());
    assert!(sim.status("b").is_finished(), "it never ran, so it is done");
    assert_eq!(rx.try_recv(), Ok(()));
}

#[test]
fn sync_known_pods_forgets_finished_pods_and_keeps_the_rest() {
    let mut sim = Sim::new();
    for uid in ["done", "leaving", "running"] {
        sim.send(create(pod(uid)));
        sim.ok(uid);
    }
    sim.send(kill(pod("done"), None));
    sim.drain("done");
    sim.send(kill(pod("leaving"), None));
    let (states, effects) = sim.s.sync_known_pods(&HashSet::from([uid("running")]));
    assert_eq!(states["done"], PodWorkerState::Terminated);
    assert_eq!(states["leaving"], PodWorkerState::Terminating);
    assert_eq!(states["running"], PodWorkerState::Syncing);
    assert!(
        matches!(&effects[..], [Effect::StopWorker(u), Effect::Unschedule(v)] if u == "done" && v == "done")
    );
    assert!(sim.s.status("done").is_none());
    assert!(sim.s.status("leaving").is_some(), "still terminating: kept");
}

#[test]
fn a_restarted_worker_gets_the_newest_update_again() {
    let mut sim = Sim::new();
    sim.send(create(labelled(pod("u1"), "v1")));
    // The worker crashed with v1 in flight; v2 arrived meanwhile.
    sim.send(update(labelled(pod("u1"), "v2")));
    let lost = sim.in_flight.remove("u1").unwrap();
    let effects = sim.s.worker_restarted(&uid("u1"), sim.now);
    sim.apply(effects);
    assert_eq!(sim.calls("u1").last().unwrap().version, "v2");
    // A late report for the lost work is ignored.
    let effects = sim.s.work_done(
        &uid("u1"),
        lost.seq,
        WorkResult::Ok(SyncOutcome::default()),
        sim.now,
    );
    assert!(effects.is_empty());
    assert!(sim.status("u1").is_working());
    // With nothing newer, the lost work itself is redelivered.
    sim.ok("u1");
    sim.send(update(labelled(pod("u1"), "v3")));
    sim.in_flight.remove("u1");
    let effects = sim.s.worker_restarted(&uid("u1"), sim.now);
    sim.apply(effects);
    assert_eq!(sim.calls("u1").last().unwrap().version, "v3");
}

/// A small deterministic PRNG (xorshift64*), so the randomized test needs no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 1,000 pods, random interleavings of create/update/kill/delete and sync results. After
/// every step: at most one sync in flight per pod and nothing for a finished pod (both
/// checked on delivery), only terminated-sync retries after a terminated sync, no sync
/// after termination began, grace periods never grow; at quiescence, every pod that was
/// never terminated has its last desired spec applied by a sync that succeeded, or (its
/// last sync of that spec failed) is queued to be retried: nothing is lost.
#[test]
fn randomized_interleavings_keep_the_invariants() {
    const PODS: u64 = 1000;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut sim = Sim::new();
    let mut last_spec: HashMap<String, String> = HashMap::new();
    let mut killed: HashSet<String> = HashSet::new();
    for step in 0..40_000u64 {
        let uid = format!("p{}", rng.below(PODS));
        // Kills are rare enough that many pods are never killed: for those, the last spec
        // must be the one applied.
        match rng.below(100) {
            0..=29 => {
                let v = format!("s{step}");
                let p = labelled(pod(&uid), &v);
                if !killed.contains(&uid) {
                    last_spec.insert(uid.clone(), v);
                }
                if rng.below(2) == 0 {
                    sim.send(create(p));
                } else {
                    sim.send(update(p));
                }
            }
            30 => {
                killed.insert(uid.clone());
                let grace = rng.below(40) as i64;
                sim.send(kill(pod(&uid), Some(grace)));
            }
            31 => {
                killed.insert(uid.clone());
                sim.send(update(deleted(pod(&uid), rng.below(40) as i64)));
            }
            _ => {
                if sim.in_flight.contains_key(&uid) {
                    // A worker reports Cancelled only when it was told to cancel (and may
                    // finish its sync anyway if it was quicker).
                    let cancel_asked = sim.cancelled.contains(&uid);
                    sim.cancelled.retain(|u| *u != uid);
                    let result = match rng.below(10) {
                        0 => failed("random"),
                        1 | 2 if cancel_asked => WorkResult::Cancelled,
                        _ => WorkResult::Ok(SyncOutcome::default()),
                    };
                    sim.finish_with(&uid, result);
                }
            }
        }
        if step % 997 == 0 {
            // Time passes: retries and resyncs that are due are delivered by the state
            // itself, with the newest update it holds (nobody resends the desired pod, so
            // a lost update would show).
            sim.now += Duration::from_secs(2);
            sim.drain_due(sim.now);
        }
    }
    // Quiesce: let every worker finish what it has, including updates that were waiting,
    // without resending anything (a resync would mask a lost update).
    while let Some(uid) = sim.in_flight.keys().next().cloned() {
        sim.ok(&uid);
    }
    assert!(sim.in_flight.is_empty(), "quiesced");
    let retrying: HashSet<String> = sim
        .drain_due(sim.now + Duration::from_secs(3600))
        .into_iter()
        .collect();
    for (uid, calls) in &sim.calls {
        if let Some(i) = calls.iter().position(|c| c.kind == Terminated) {
            // Only retries of the terminated sync may follow it (it can fail too).
            assert!(
                calls[i..].iter().all(|c| c.kind == Terminated),
                "{uid}: work after the terminated sync: {calls:?}"
            );
        }
        let graces: Vec<i64> = calls.iter().filter_map(|c| c.grace).collect();
        assert!(
            graces.windows(2).all(|w| w[1] <= w[0]),
            "{uid}: grace grew: {graces:?}"
        );
        if let Some(t) = calls.iter().position(|c| c.kind == Terminating) {
            assert!(
                calls[t..].iter().all(|c| c.kind != Sync),
                "{uid}: resurrected: {calls:?}"
            );
        }
        if !killed.contains(uid) {
            let delivered = calls
                .iter()
                .rev()
                .find(|c| c.kind == Sync)
                .map(|c| c.version.clone());
            assert_eq!(
                delivered.as_ref(),
                last_spec.get(uid),
                "{uid}: last desired state never delivered"
            );
            assert!(
                sim.applied.get(uid) == last_spec.get(uid) || retrying.contains(uid),
                "{uid}: last desired state neither applied nor queued for a retry"
            );
        }
    }
    assert!(
        sim.calls.len() as u64 > PODS * 9 / 10,
        "the test exercised most pods"
    );
    let survivors = sim.calls.keys().filter(|u| !killed.contains(*u)).count();
    let terminated = sim
        .calls
        .values()
        .filter(|c| c.iter().any(|c| c.kind == Terminated))
        .count();
    assert!(
        survivors > 100 && terminated > 100,
        "both outcomes covered: {survivors} alive, {terminated} terminated"
    );
}
