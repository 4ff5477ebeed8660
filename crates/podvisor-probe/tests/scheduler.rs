//! The probe scheduler's rules on paused time: when runs are due, thresholds, what a
//! verdict sets off, startup probes holding the others back, the limit on runs at once,
//! stale answers, terminating pods and the spread after a restart.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{PodUid, SharedPod};
use podvisor_cri::{ContainerState, ContainerStatus, PodStatus};
use podvisor_probe::{Effect, Limits, Outcome, ProbeKey, ProbeKind, Probes, Run};
use tokio::time::Instant;

const S: Duration = Duration::from_secs(1);

fn pod(containers: serde_json::Value) -> SharedPod {
    let p: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "uid": "u1"},
        "spec": {"containers": containers}
    }))
    .unwrap();
    SharedPod::new(p).unwrap()
}

fn probe(extra: serde_json::Value) -> serde_json::Value {
    let mut p = serde_json::json!({"exec": {"command": ["true"]}, "periodSeconds": 1});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    p
}

fn status(id: &str, running: bool, started_at: i64) -> Arc<PodStatus> {
    Arc::new(PodStatus {
        ips: vec!["10.0.0.5".into()],
        containers: vec![ContainerStatus {
            id: id.into(),
            sandbox_id: "s".into(),
            name: "app".into(),
            attempt: 0,
            state: if running {
                ContainerState::Running
            } else {
                ContainerState::Exited
            },
            created_at: started_at,
            started_at,
            finished_at: 0,
            exit_code: 0,
            image: String::new(),
            image_ref: String::new(),
            reason: String::new(),
            message: String::new(),
            log_path: String::new(),
            user: None,
            resources: None,
            labels: Default::default(),
            annotations: Default::default(),
        }],
        ..Default::default()
    })
}

fn limits(n: usize) -> Limits {
    Limits { total: n, exec: n }
}

fn wall() -> i64 {
    podvisor_core::time::now_nanos()
}

fn uid() -> PodUid {
    PodUid::from("u1")
}

/// The next key due, and how long it took to come.
async fn next(p: &mut Probes) -> (ProbeKey, Duration) {
    let t0 = Instant::now();
    let (k, _) = std::future::poll_fn(|cx| p.queue().poll_due(cx)).await;
    (k, t0.elapsed())
}

async fn nothing_due_within(p: &mut Probes, d: Duration) {
    let r = tokio::time::timeout(d, std::future::poll_fn(|cx| p.queue().poll_due(cx))).await;
    assert!(r.is_err(), "nothing should be due, got {:?}", r.unwrap().0);
}

async fn next_run(p: &mut Probes) -> Run {
    let (key, _) = next(p).await;
    run(p, key)
}

fn run(p: &mut Probes, key: ProbeKey) -> Run {
    p.due(key, Instant::now()).expect("a run")
}

fn finish(p: &mut Probes, r: &Run, o: Outcome) -> Vec<Effect> {
    p.finish(&r.key, &r.container_id, o, Instant::now())
}

fn results(effects: &[Effect]) -> Vec<(ProbeKind, bool)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Result(r) => Some((r.kind, r.passed)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn readiness_starts_after_its_delay_keeps_its_cadence_and_reports_changes_once() {
    let mut p = Probes::new(limits(8), wall());
    let ready = probe(serde_json::json!({"initialDelaySeconds": 2, "failureThreshold": 2}));
    let _ = p.set_pod(
        pod(serde_json::json!([{"name": "app", "image": "i", "readinessProbe": ready}])),
        Instant::now(),
        wall(),
    );
    p.set_status(&uid(), status("c1", true, wall()), Instant::now(), wall());
    let (key, after) = next(&mut p).await;
    assert_eq!(key.kind, ProbeKind::Readiness);
    assert_eq!(
        after,
        2 * S,
        "initialDelaySeconds after the container started"
    );
    let r = run(&mut p, key.clone());
    assert_eq!(
        (r.container_id.as_str(), r.pod_ip.as_str()),
        ("c1", "10.0.0.5")
    );
    // The run takes 300 ms; the next is still due one period after the last was due.
    tokio::time::advance(S * 3 / 10).await;
    let e = finish(&mut p, &r, Outcome::Success);
    assert_eq!(results(&e), [(ProbeKind::Readiness, true)]);
    let (key, after) = next(&mut p).await;
    assert_eq!(after, S * 7 / 10);
    let r = run(&mut p, key);
    assert!(
        results(&finish(&mut p, &r, Outcome::Success)).is_empty(),
        "no change, no message"
    );
    let r = next_run(&mut p).await;
    let e = finish(
        &mut p,
        &r,
        Outcome::Failure("HTTP probe failed with statuscode: 500".into()),
    );
    assert!(results(&e).is_empty(), "one failure of two");
    match &e[..] {
        [
            Effect::Event {
                reason, message, ..
            },
        ] => {
            assert_eq!(*reason, "Unhealthy");
            assert_eq!(
                message,
                "Readiness probe failed: HTTP probe failed with statuscode: 500"
            );
        }
        other => panic!("{other:?}"),
    }
    let r = next_run(&mut p).await;
    let e = finish(&mut p, &r, Outcome::Failure("x".into()));
    assert_eq!(results(&e), [(ProbeKind::Readiness, false)]);
    // An error says nothing about the container: counted as neither.
    let r = next_run(&mut p).await;
    let e = finish(&mut p, &r, Outcome::Error("runtime down".into()));
    assert!(results(&e).is_empty());
    assert_eq!(p.summary().errors, 1);
}

#[tokio::test(start_paused = true)]
async fn a_startup_probe_holds_the_others_back_then_releases_them() {
    let mut p = Probes::new(limits(8), wall());
    let c = serde_json::json!([{"name": "app", "image": "i",
        "startupProbe": probe(serde_json::json!({"failureThreshold": 30})),
        "livenessProbe": probe(serde_json::json!({})),
        "readinessProbe": probe(serde_json::json!({}))}]);
    let _ = p.set_pod(pod(c), Instant::now(), wall());
    p.set_status(&uid(), status("c1", true, wall()), Instant::now(), wall());
    let (key, _) = next(&mut p).await;
    assert_eq!(key.kind, ProbeKind::Startup);
    let r = run(&mut p, key);
    assert!(p.verdicts(&uid()).started.is_empty());
    let e = finish(&mut p, &r, Outcome::Failure("not yet".into()));
    assert!(results(&e).is_empty());
    let r = next_run(&mut p).await;
    assert_eq!(
        r.key.kind,
        ProbeKind::Startup,
        "only the startup probe runs"
    );
    let e = finish(&mut p, &r, Outcome::Success);
    assert_eq!(results(&e), [(ProbeKind::Startup, true)]);
    assert!(
        e.contains(&Effect::Sync(uid())),
        "a started sidecar lets the next init container go"
    );
    assert!(p.verdicts(&uid()).started.contains("c1"));
    let mut kinds = vec![next(&mut p).await.0.kind, next(&mut p).await.0.kind];
    kinds.sort();
    assert_eq!(kinds, [ProbeKind::Readiness, ProbeKind::Liveness]);
    let startup = ProbeKey {
        uid: uid(),
        container: "app".into(),
        kind: ProbeKind::Startup,
    };
    assert!(
        !p.is_scheduled(&startup),
        "a startup probe that succeeded stops"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_liveness_probe_asks_for_a_sync_names_the_instance_and_waits_for_the_next() {
    let mut p = Probes::new(limits(8), wall());
    let live =
        probe(serde_json::json!({"failureThreshold": 2, "terminationGracePeriodSeconds": 3}));
    let _ = p.set_pod(
        pod(serde_json::json!([{"name": "app", "image": "i", "livenessProbe": live}])),
        Instant::now(),
        wall(),
    );
    p.set_status(&uid(), status("c1", true, wall()), Instant::now(), wall());
    for _ in 0..2 {
        let r = next_run(&mut p).await;
        let e = finish(&mut p, &r, Outcome::Failure("exit 1".into()));
        if let Some(Effect::Sync(u)) = e.iter().find(|e| matches!(e, Effect::Sync(_))) {
            assert_eq!(u, &uid());
        }
    }
    let v = p.verdicts(&uid());
    let failed = &v.failed["c1"];
    assert_eq!(
        (failed.kind, failed.grace_seconds),
        (ProbeKind::Liveness, Some(3))
    );
    nothing_due_within(&mut p, 5 * S).await;
    // The kill and restart: c1 exits, c2 runs and is probed afresh.
    p.set_status(&uid(), status("c1", false, wall()), Instant::now(), wall());
    assert!(
        p.verdicts(&uid()).failed.is_empty(),
        "only running instances are killed"
    );
    p.set_status(&uid(), status("c2", true, wall()), Instant::now(), wall());
    let r = next_run(&mut p).await;
    assert_eq!(r.container_id, "c2");
}

#[tokio::test(start_paused = true)]
async fn runs_beyond_the_limit_wait_and_a_stale_answer_changes_nothing() {
    let mut p = Probes::new(limits(1), wall());
    let c = serde_json::json!([{"name": "app", "image": "i",
        "livenessProbe": probe(serde_json::json!({"failureThreshold": 1})),
        "readinessProbe": probe(serde_json::json!({}))}]);
    let _ = p.set_pod(pod(c), Instant::now(), wall());
    p.set_status(&uid(), status("c1", true, wall()), Instant::now(), wall());
    let first = next_run(&mut p).await;
    let (second, _) = next(&mut p).await;
    assert!(
        p.due(second, Instant::now()).is_none(),
        "over the limit: it waits"
    );
    assert_eq!(p.summary().waiting, 1);
    tokio::time::advance(S / 2).await;
    assert!(p.next_waiting(Instant::now()).is_none(), "no slot yet");
    finish(&mut p, &first, Outcome::Success);
    let waited = p
        .next_waiting(Instant::now())
        .expect("the waiting run starts");
    assert!(
        p.summary().lateness.p99_us >= 500_000.0,
        "{:?}",
        p.summary().lateness
    );
    // The container is replaced while that run is under way: its answer is stale.
    p.set_status(&uid(), status("c2", true, wall()), Instant::now(), wall());
    assert!(finish(&mut p, &waited, Outcome::Failure("old".into())).is_empty());
    assert!(p.verdicts(&uid()).failed.is_empty());
    let r = next_run(&mut p).await;
    assert_eq!(r.container_id, "c2");
}

#[tokio::test(start_paused = true)]
async fn a_terminating_pod_keeps_only_readiness_and_a_restart_spreads_first_probes() {
    let long_ago = wall() - 3_600_000_000_000;
    let mut p = Probes::new(limits(8), wall());
    let c = serde_json::json!([{"name": "app", "image": "i",
        "livenessProbe": probe(serde_json::json!({"periodSeconds": 10})),
        "readinessProbe": probe(serde_json::json!({"periodSeconds": 10, "initialDelaySeconds": 100}))}]);
    let _ = p.set_pod(pod(c), Instant::now(), wall());
    p.set_status(&uid(), status("c1", true, long_ago), Instant::now(), wall());
    // Running since long before this scheduler: both are due within one period (not
    // after the initial delay, which has long passed, and not all at once).
    let (_, a) = next(&mut p).await;
    let (_, b) = next(&mut p).await;
    assert!(a < 10 * S && b < 10 * S, "{a:?} {b:?}");
    p.stop_liveness_and_startup(&uid(), Instant::now(), wall());
    let live = ProbeKey {
        uid: uid(),
        container: "app".into(),
        kind: ProbeKind::Liveness,
    };
    assert!(p.due(live, Instant::now()).is_none(), "liveness stopped");
    let ready = ProbeKey {
        uid: uid(),
        container: "app".into(),
        kind: ProbeKind::Readiness,
    };
    assert!(p.due(ready, Instant::now()).is_some(), "readiness goes on");
    p.remove(&uid());
    assert_eq!(p.summary().probes, 0);
}

#[tokio::test(start_paused = true)]
async fn exec_probes_have_a_bound_of_their_own_and_do_not_hold_up_the_others() {
    let mut p = Probes::new(Limits { total: 8, exec: 1 }, wall());
    let exec = probe(serde_json::json!({}));
    let http = serde_json::json!({"httpGet": {"port": 80}, "periodSeconds": 1});
    let c = serde_json::json!([
        {"name": "a", "image": "i", "livenessProbe": exec},
        {"name": "b", "image": "i", "livenessProbe": exec},
        {"name": "c", "image": "i", "readinessProbe": http}]);
    let _ = p.set_pod(pod(c), Instant::now(), wall());
    let one = status("x", true, wall());
    let mut three = (*one).clone();
    three.containers = ["a", "b", "c"]
        .iter()
        .map(|n| {
            let mut c = one.containers[0].clone();
            c.name = n.to_string();
            c.id = format!("{n}1");
            c
        })
        .collect();
    p.set_status(&uid(), Arc::new(three), Instant::now(), wall());
    let mut started = Vec::new();
    for _ in 0..3 {
        let (key, _) = next(&mut p).await;
        if let Some(r) = p.due(key, Instant::now()) {
            started.push(r);
        }
    }
    let mut kinds: Vec<ProbeKind> = started.iter().map(|r| r.key.kind).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [ProbeKind::Readiness, ProbeKind::Liveness],
        "one exec and the httpGet"
    );
    assert_eq!((p.summary().exec_in_flight, p.summary().waiting), (1, 1));
    assert!(
        p.next_waiting(Instant::now()).is_none(),
        "the exec slot is taken"
    );
    let exec_run = started
        .iter()
        .find(|r| r.key.kind == ProbeKind::Liveness)
        .unwrap()
        .clone();
    finish(&mut p, &exec_run, Outcome::Success);
    let waited = p.next_waiting(Instant::now()).expect("the other exec, now");
    assert_ne!(waited.key.container, exec_run.key.container);
    assert_eq!(p.summary().exec_in_flight, 1);
}

#[tokio::test(start_paused = true)]
async fn a_pod_without_an_ip_is_not_probed_at_the_nodes_loopback_and_fails_nothing() {
    let mut p = Probes::new(limits(8), wall());
    let live =
        serde_json::json!({"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 1});
    let _ = p.set_pod(
        pod(serde_json::json!([{"name": "app", "image": "i", "livenessProbe": live}])),
        Instant::now(),
        wall(),
    );
    let mut no_ip = (*status("c1", true, wall())).clone();
    no_ip.ips.clear();
    p.set_status(&uid(), Arc::new(no_ip), Instant::now(), wall());
    let r = next_run(&mut p).await;
    assert_eq!(r.pod_ip, "", "not 127.0.0.1: that is the node, not the pod");
    let target = podvisor_probe::run::Target {
        runtime: Arc::new(podvisor_cri::FakeRuntime::new()),
        container_id: r.container_id.clone(),
        pod_ip: r.pod_ip.clone(),
    };
    let outcome = podvisor_probe::run::probe(r.action.clone(), target, S).await;
    assert!(matches!(outcome, Outcome::Error(_)), "{outcome:?}");
    let e = finish(&mut p, &r, outcome);
    assert!(
        results(&e).is_empty(),
        "an unprobed run counts neither way, even at failureThreshold 1"
    );
}
