//! The PLEG and the status cache as actors, on the fake runtime with paused time.

mod support;

use std::time::Duration;

use podvisor_cri::fake::Op;
use podvisor_cri::{ContainerState, CriError, FakeRuntime, Runtime};
use podvisor_kubelet::pleg::{PlegConfig, PlegMode};
use podvisor_kubelet::protocol::cache::{DeleteStatus, GetNewerThan, GetStatus, Need};
use podvisor_kubelet::protocol::lifecycle::{PlegEventKind::*, Reinspect, RelistNow};
use support::start_pod_of;
use support::*;
use tokio::time::Instant;

fn named(
    kind: podvisor_kubelet::protocol::lifecycle::PlegEventKind,
    name: &str,
) -> (podvisor_kubelet::protocol::lifecycle::PlegEventKind, String) {
    (kind, name.to_string())
}

#[test]
fn first_relist_reports_every_running_container_and_fills_the_cache() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        start_pod(&fake, "u1", &["web", "log"]).await;
        start_pod(&fake, "u2", &["db"]).await;
        let h = harness(fake, manual());
        // The PLEG relists once at start; wait for it through the cache.
        let before = Instant::now();
        let rx = h
            .cache
            .send(GetNewerThan {
                uid: "u1".into(),
                need: Need::newer_than(Some(before - Duration::from_millis(1))),
            })
            .await
            .unwrap();
        let cached = rx.await.unwrap();
        assert_eq!(cached.status.containers.len(), 2);
        until("events", Duration::from_secs(1), || h.events.len() == 3).await;
        let mut got = h.events.take();
        got.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            got,
            [
                named(ContainerStarted, "db"),
                named(ContainerStarted, "log"),
                named(ContainerStarted, "web")
            ]
        );
        assert!(h.health.check().is_ok(), "healthy after the first relist");
    });
}

#[test]
fn an_unchanged_runtime_emits_nothing() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.clear_calls();
        let report = h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!((report.events, report.inspected), (0, 0));
        assert!(h.events.take().is_empty());
        assert!(
            fake.inspections().is_empty(),
            "nothing changed, nothing inspected"
        );
    });
}

#[test]
fn an_exit_is_a_death_and_the_cache_holds_the_exit_code() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.exit_container(&ids[0], 7);
        let t = Instant::now();
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        let rx = h
            .cache
            .send(GetNewerThan {
                uid: "u1".into(),
                need: Need::newer_than(Some(t - Duration::from_nanos(1))),
            })
            .await
            .unwrap();
        let cached = rx.await.unwrap();
        assert_eq!(cached.status.container("job").unwrap().exit_code, 7);
    });
}

#[test]
fn a_pod_removed_between_relists_died_and_was_removed() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (sandbox, _) = start_pod(&fake, "u1", &["web"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.remove_sandbox(&sandbox).await.unwrap();
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(
            h.events.take(),
            [named(ContainerDied, "web"), named(ContainerRemoved, "web")]
        );
        let report = h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(report.pods, 0, "a vanished pod is forgotten");
    });
}

#[test]
fn a_relist_inspects_what_it_listed_by_status_calls_alone() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        start_pod(&fake, "u1", &["web"]).await;
        fake.clear_calls();
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(h.events.take(), [named(ContainerStarted, "web")]);
        assert_eq!(fake.calls_of(Op::PodStatusListed), ["u1"]);
        assert!(
            fake.calls_of(Op::PodStatus).is_empty(),
            "no listing of the pod's own after the relist's"
        );
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        let web = cached.status.container("web").unwrap();
        assert_eq!(web.state, ContainerState::Running);
        assert!(
            !web.sandbox_id.is_empty(),
            "the listing's sandbox id is kept"
        );
        // A worker's re-inspection has no listing to go by: it lists the pod itself.
        h.pleg
            .send(Reinspect::pod("u1".into()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(fake.calls_of(Op::PodStatus), ["u1"]);
    });
}

#[test]
fn a_sandbox_only_change_is_a_pod_sync() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (sandbox, _) = start_pod(&fake, "u1", &[]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(h.events.take(), [named(PodSync, "")]);
        fake.stop_sandbox(&sandbox).await.unwrap();
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!(h.events.take(), [named(PodSync, "")]);
    });
}

#[test]
fn a_failed_inspection_emits_nothing_and_is_retried_next_relist() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        start_pod(&fake, "u1", &["web"]).await;
        fake.fail_next(
            Op::PodStatus,
            CriError::failed("ContainerStatus", "transient"),
        );
        let report = h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!((report.failed, report.events), (1, 0));
        assert!(h.events.take().is_empty());
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert!(
            cached.error.unwrap().to_string().contains("transient"),
            "the cache records the error"
        );
        let report = h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert_eq!((report.failed, report.events), (0, 1));
        assert_eq!(h.events.take(), [named(ContainerStarted, "web")]);
        assert!(
            h.cache
                .send(GetStatus { uid: "u1".into() })
                .await
                .unwrap()
                .error
                .is_none()
        );
    });
}

#[test]
fn a_failed_listing_keeps_the_records_and_the_health_mark() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.fail_next(
            Op::ListPods,
            CriError::Unreachable {
                endpoint: "x".into(),
                reason: "down".into(),
            },
        );
        assert!(h.pleg.send(RelistNow).await.unwrap().is_err());
        assert!(h.pleg.send(RelistNow).await.unwrap().is_ok());
        assert!(h.events.take().is_empty(), "nothing changed in the runtime");
    });
}

#[test]
fn reinspect_refreshes_one_pod_without_waiting_for_a_relist() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.exit_container(&ids[0], 3);
        let t = Instant::now();
        let rx = h
            .cache
            .send(GetNewerThan {
                uid: "u1".into(),
                need: Need::newer_than(Some(t)),
            })
            .await
            .unwrap();
        tokio::time::advance(Duration::from_millis(1)).await;
        h.pleg
            .send(Reinspect::pod("u1".into()))
            .await
            .unwrap()
            .unwrap();
        let cached = rx.await.unwrap();
        assert_eq!(cached.status.container("job").unwrap().exit_code, 3);
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        // The next relist has nothing left to report for it.
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert!(h.events.take().is_empty());
    });
}

#[test]
fn a_pod_whose_inspection_hangs_is_inspected_aside_and_holds_up_no_other() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (_, stuck) = start_pod(&fake, "stuck", &["app"]).await;
        let (_, fine) = start_pod(&fake, "fine", &["job"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        fake.clear_calls();
        // The runtime stops answering for one pod (until the CRI deadline, 2 min).
        fake.set_target_delay(Op::PodStatus, "stuck", Some(Duration::from_secs(120)));
        fake.exit_container(&stuck[0], 1);
        fake.exit_container(&fine[0], 3);
        let t0 = Instant::now();
        let report = h.pleg.send(RelistNow).await.unwrap().unwrap();
        let waited = t0.elapsed();
        assert!(
            waited <= Duration::from_secs(2),
            "the relist waited {waited:?}"
        );
        assert_eq!(report.failed, 1);
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        let cached = |uid: &'static str| h.cache.send(GetStatus { uid: uid.into() });
        let f = cached("fine").await.unwrap();
        assert_eq!(f.status.container("job").unwrap().exit_code, 3);
        // The stuck pod's status is the timeout, never an old status served as fresh.
        let s = cached("stuck").await.unwrap();
        assert!(s.error.unwrap().to_string().contains("bounded by the PLEG"));
        // Meanwhile relists and re-inspections do not wait for it, nor call for it again.
        for _ in 0..5 {
            let t = Instant::now();
            h.pleg.send(RelistNow).await.unwrap().unwrap();
            assert!(t.elapsed() < Duration::from_millis(10));
        }
        let t = Instant::now();
        let answer = h.pleg.send(Reinspect::pod("stuck".into())).await.unwrap();
        assert!(answer.is_err() && t.elapsed() < Duration::from_millis(10));
        let stuck_calls = || fake.inspections().iter().filter(|t| *t == "stuck").count();
        assert_eq!(stuck_calls(), 2, "the bounded call, then one aside");
        let pleg = h.registry.get("pleg").unwrap().state.unwrap();
        assert_eq!(pleg["slow_pods"], 1);
        assert!(h.health.check().is_ok());
        // The runtime answers at last: the aside inspection settles the pod.
        until("the stuck pod settled", Duration::from_secs(200), || {
            h.events.len() == 1
        })
        .await;
        assert_eq!(h.events.take(), [named(ContainerDied, "app")]);
        let s = cached("stuck").await.unwrap();
        assert!(s.error.is_none());
        assert_eq!(s.status.container("app").unwrap().exit_code, 1);
        fake.set_target_delay(Op::PodStatus, "stuck", None);
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert!(h.events.take().is_empty(), "nothing left to report");
        let pleg = h.registry.get("pleg").unwrap().state.unwrap();
        assert_eq!(pleg["slow_pods"], 0);
    });
}

#[test]
fn relisting_runs_on_its_own_every_period() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                relist_period: Duration::from_secs(1),
                ..PlegConfig::default()
            },
        );
        until("first relist", Duration::from_secs(2), || {
            h.events.len() == 1
        })
        .await;
        h.events.take();
        fake.exit_container(&ids[0], 0);
        let t0 = Instant::now();
        until("death seen", Duration::from_secs(2), || h.events.len() == 1).await;
        assert!(
            t0.elapsed() <= Duration::from_secs(1),
            "seen within one period"
        );
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        let listed = fake.calls_of(Op::ListPods).len();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let more = fake.calls_of(Op::ListPods).len() - listed;
        assert!((9..=11).contains(&more), "{more} relists in 10 s");
    });
}

#[test]
fn evented_mode_reports_exits_from_the_stream() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                ..manual()
            },
        );
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 1
        })
        .await;
        h.events.take();
        let relists = fake.calls_of(Op::ListPods).len();
        fake.exit_container(&ids[0], 9);
        until("death from the stream", Duration::from_millis(100), || {
            h.events.len() == 1
        })
        .await;
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        assert_eq!(
            fake.calls_of(Op::ListPods).len(),
            relists,
            "no relist needed"
        );
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert_eq!(cached.status.container("job").unwrap().exit_code, 9);
        let summary = h.registry.get("pleg").unwrap().state.unwrap();
        assert_eq!(summary["mode"], "evented");
    });
}

#[test]
fn a_runtime_that_cannot_stream_lands_in_relisting_at_once() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new(); // answers Unimplemented, like containerd 1.6
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                relist_period: Duration::from_millis(100),
                ..PlegConfig::default()
            },
        );
        let t0 = Instant::now();
        until("relisting mode", Duration::from_secs(1), || {
            h.registry
                .get("pleg")
                .and_then(|a| a.state)
                .is_some_and(|s| s["mode"] == "relist")
        })
        .await;
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert_eq!(
            fake.calls_of(Op::Events).len(),
            1,
            "one attempt, no retry storm"
        );
        let listed = fake.calls_of(Op::ListPods).len();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            fake.calls_of(Op::ListPods).len() - listed >= 9,
            "relisting at the fast period"
        );
    });
}

#[test]
fn a_restarted_pleg_relists_everything_once_and_misses_nothing() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let (_, ids) = start_pod(&fake, "u1", &["web", "job"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        h.events.take();
        assert!(h.registry.inject_panic("pleg", "test"));
        // While it is down, a container exits.
        fake.exit_container(&ids[1], 1);
        until("pleg restarted", Duration::from_secs(1), || {
            h.registry
                .get("pleg")
                .is_some_and(|a| a.mailbox.restarts == 1)
        })
        .await;
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        let mut got = h.events.take();
        got.sort_by(|a, b| a.1.cmp(&b.1));
        // Everything is reported afresh, including the exit that happened meanwhile.
        assert_eq!(
            got,
            [named(ContainerDied, "job"), named(ContainerStarted, "web")]
        );
        assert_eq!(
            h.registry.get("status-cache").unwrap().mailbox.restarts,
            0,
            "a PLEG restart leaves the cache alone"
        );
    });
}

#[test]
fn a_restarted_cache_fails_its_waiters_and_is_refilled() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        let far_future = Instant::now() + Duration::from_secs(3600);
        let waiting = h
            .cache
            .send(GetNewerThan {
                uid: "u1".into(),
                need: Need::newer_than(Some(far_future)),
            })
            .await
            .unwrap();
        assert!(h.registry.inject_panic("status-cache", "test"));
        // The waiter learns at once; it does not hang until the far future.
        let t0 = Instant::now();
        assert!(waiting.await.is_err());
        assert!(t0.elapsed() < Duration::from_millis(100));
        // Rest-for-one: the PLEG restarts with the cache and its full relist refills it.
        until("refilled", Duration::from_secs(1), || {
            h.registry
                .get("status-cache")
                .is_some_and(|a| a.state.as_ref().is_some_and(|s| s["pods"] == 1))
        })
        .await;
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert_eq!(cached.status.containers.len(), 1);
        assert_eq!(h.registry.get("pleg").unwrap().mailbox.restarts, 1);
    });
}

#[test]
fn cache_subscribers_wake_on_set_or_global_time_in_order() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        // Three concurrent waiters for a pod that does not exist yet.
        let t = Instant::now();
        let mut rxs = Vec::new();
        for ms in [3u64, 1, 2] {
            rxs.push(
                h.cache
                    .send(GetNewerThan {
                        uid: "u1".into(),
                        need: Need::newer_than(Some(t + Duration::from_millis(ms))),
                    })
                    .await
                    .unwrap(),
            );
        }
        tokio::time::advance(Duration::from_millis(10)).await;
        start_pod(&fake, "u1", &["web"]).await;
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        for rx in rxs {
            assert_eq!(rx.await.unwrap().status.containers.len(), 1);
        }
        // Waiting on a pod nobody sets: answered by the global timestamp of the next relist.
        let rx = h
            .cache
            .send(GetNewerThan {
                uid: "ghost".into(),
                need: Need::newer_than(Some(Instant::now())),
            })
            .await
            .unwrap();
        tokio::time::advance(Duration::from_millis(1)).await;
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        let ghost = rx.await.unwrap();
        assert!(ghost.status.containers.is_empty() && ghost.modified.is_none());
        let summary = h.registry.get("status-cache").unwrap().state.unwrap();
        assert_eq!(summary["waiting_total"], 0, "nobody left waiting");
    });
}

fn mode_of(h: &Harness) -> String {
    h.registry
        .get("pleg")
        .and_then(|a| a.state)
        .map(|s| s["mode"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// Waits for the first relist's one event (a pod with one container) and drops it.
async fn first_relist(h: &Harness) {
    until("first relist", Duration::from_secs(1), || {
        h.events.len() == 1
    })
    .await;
    h.events.take();
}

fn evented(fake: &FakeRuntime, retries: u32) -> Harness {
    harness(
        fake.clone(),
        PlegConfig {
            mode: PlegMode::Evented,
            max_stream_retries: retries,
            ..manual()
        },
    )
}

#[test]
fn a_broken_stream_counts_once_and_is_reopened_once() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = evented(&fake, 5);
        first_relist(&h).await;
        assert_eq!(fake.calls_of(Op::Events).len(), 1);
        // An error, then the end of the same stream: one failure, one new stream.
        fake.fail_event_streams(CriError::failed("GetContainerEvents", "connection reset"));
        fake.end_event_streams();
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(fake.calls_of(Op::Events).len(), 2, "reopened once");
        assert_eq!(mode_of(&h), "evented");
        fake.exit_container(&ids[0], 2);
        until(
            "death from the new stream",
            Duration::from_millis(100),
            || h.events.len() > 0,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            h.events.take(),
            [named(ContainerDied, "job")],
            "delivered once"
        );
    });
}

#[test]
fn evented_mode_falls_back_after_the_configured_failed_attempts() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        start_pod(&fake, "u1", &["web"]).await;
        refuse_streams(&fake, 3);
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                max_stream_retries: 3,
                relist_period: Duration::from_millis(100),
                ..PlegConfig::default()
            },
        );
        until("relisting mode", Duration::from_secs(10), || {
            mode_of(&h) == "relist"
        })
        .await;
        assert_eq!(fake.calls_of(Op::Events).len(), 3, "three attempts");
        let listed = fake.calls_of(Op::ListPods).len();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            fake.calls_of(Op::ListPods).len() - listed >= 9,
            "relisting at the normal period"
        );
        assert_eq!(fake.calls_of(Op::Events).len(), 3, "no more attempts");
    });
}

#[test]
fn a_deleted_container_is_reported_died_and_removed_from_the_stream() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = evented(&fake, 5);
        first_relist(&h).await;
        let relists = fake.calls_of(Op::ListPods).len();
        fake.remove_container(&ids[0]).await.unwrap();
        until("events", Duration::from_millis(100), || h.events.len() == 2).await;
        assert_eq!(
            h.events.take(),
            [named(ContainerDied, "job"), named(ContainerRemoved, "job")]
        );
        assert_eq!(
            fake.calls_of(Op::ListPods).len(),
            relists,
            "from the stream"
        );
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert!(cached.status.containers.is_empty());
    });
}

/// containerd sends the container's sandbox and its containers with each event; for a pod
/// with that one ready sandbox they are its status, and the pod is not inspected again
/// (the kubelet's evented PLEG caches them the same way).
#[test]
fn an_events_own_statuses_settle_it_without_inspecting_the_pod() {
    paused_system().block_on(async {
        for snapshots in [true, false] {
            let mut fake = FakeRuntime::new().with_event_stream();
            if !snapshots {
                fake = fake.without_event_snapshots();
            }
            let (_, ids) = start_pod(&fake, "u1", &["job", "side"]).await;
            let h = evented(&fake, 5);
            until("first relist", Duration::from_secs(1), || {
                h.events.len() == 2
            })
            .await;
            h.events.take();
            let inspected = fake.inspections().len();
            fake.exit_container(&ids[0], 9);
            until("death from the stream", Duration::from_millis(100), || {
                h.events.len() == 1
            })
            .await;
            assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
            let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
            let job = cached.status.container("job").unwrap();
            assert_eq!((job.state, job.exit_code), (ContainerState::Exited, 9));
            assert_eq!(
                cached.status.container("side").unwrap().state,
                ContainerState::Running
            );
            assert_eq!(cached.status.sandboxes.len(), 1);
            let extra = fake.inspections().len() - inspected;
            let from_snapshots = summary(&h)["events_from_snapshots"].clone();
            if snapshots {
                assert_eq!((extra, from_snapshots), (0, 1.into()), "no inspection");
            } else {
                assert_eq!((extra, from_snapshots), (1, 0.into()), "one inspection");
            }
        }
    });
}

/// A snapshot shows one sandbox: for a pod that has had two it is not the whole status,
/// and the pod is inspected.
#[test]
fn a_pod_with_an_older_sandbox_is_inspected_after_its_event() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (old, _) = start_pod(&fake, "u1", &["web"]).await;
        fake.stop_sandbox(&old).await.unwrap();
        let mut sb = podvisor_cri::sample::sandbox_config("u1", "u1", false, "/logs");
        sb.metadata.as_mut().unwrap().attempt = 1;
        let sandbox = fake.run_sandbox(&sb).await.unwrap();
        let mut config = podvisor_cri::sample::container_config(&sb, "web", &["x"]);
        config.metadata.as_mut().unwrap().attempt = 1;
        let id = fake.create_container(&sandbox, &config, &sb).await.unwrap();
        fake.start_container(&id).await.unwrap();
        let ids = [id];
        let h = evented(&fake, 5);
        // The old attempt's container, and the new one.
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 2
        })
        .await;
        h.events.take();
        let inspected = fake.inspections().len();
        fake.exit_container(&ids[0], 2);
        until("death from the stream", Duration::from_millis(100), || {
            h.events.len() == 1
        })
        .await;
        assert_eq!(fake.inspections().len(), inspected + 1);
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert_eq!(cached.status.sandboxes.len(), 2, "both sandboxes kept");
        assert_eq!(summary(&h)["events_from_snapshots"], 0);
    });
}

#[test]
fn evented_mode_keeps_a_slow_safety_relist() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                safety_relist_period: Duration::from_secs(300),
                ..PlegConfig::default()
            },
        );
        first_relist(&h).await;
        // The relist a second after the stream opened covers the moments before the
        // runtime had the subscription; then only the safety relist runs.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let listed = fake.calls_of(Op::ListPods).len();
        tokio::time::sleep(Duration::from_secs(297)).await;
        assert_eq!(fake.calls_of(Op::ListPods).len(), listed, "no 1 s relists");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(fake.calls_of(Op::ListPods).len(), listed + 1);
        assert!(h.health.check().is_ok());
    });
}

#[test]
fn the_pleg_turns_unhealthy_when_relists_keep_failing() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let h = harness(
            fake.clone(),
            PlegConfig {
                relist_period: Duration::from_secs(1),
                health_threshold: Duration::from_secs(5),
                ..PlegConfig::default()
            },
        );
        assert!(h.health.check().is_err(), "unhealthy before any relist");
        until("first relist", Duration::from_secs(2), || {
            h.health.check().is_ok()
        })
        .await;
        for _ in 0..20 {
            fake.fail_next(Op::ListPods, CriError::failed("ListPodSandbox", "down"));
        }
        until("unhealthy", Duration::from_secs(10), || {
            h.health.check().is_err()
        })
        .await;
        // The debug summary follows at the PLEG's next wake-up (its next relist attempt).
        until("the summary says so", Duration::from_secs(2), || {
            h.registry
                .get("pleg")
                .and_then(|a| a.state)
                .is_some_and(|s| s["healthy"] == false)
        })
        .await;
    });
}

#[test]
fn a_deleted_pod_is_forgotten_and_its_waiters_still_answered() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(fake.clone(), manual());
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        let rx = h
            .cache
            .send(GetNewerThan {
                uid: "u1".into(),
                need: Need::newer_than(Some(Instant::now())),
            })
            .await
            .unwrap();
        h.cache
            .send(DeleteStatus { uid: "u1".into() })
            .await
            .unwrap();
        let gone = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert!(gone.modified.is_none() && gone.status.containers.is_empty());
        // The waiter is not lost with the entry: the next relist's global time answers it.
        tokio::time::advance(Duration::from_millis(1)).await;
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        assert!(rx.await.is_ok());
    });
}

fn summary(h: &Harness) -> serde_json::Value {
    h.registry.get("pleg").and_then(|a| a.state).unwrap()
}

fn evented_with(fake: &FakeRuntime, safety: Duration) -> Harness {
    harness(
        fake.clone(),
        PlegConfig {
            mode: PlegMode::Evented,
            relist_period: Duration::from_secs(1),
            safety_relist_period: safety,
            ..PlegConfig::default()
        },
    )
}

/// Relists within `window` from now.
async fn relists_within(fake: &FakeRuntime, window: Duration) -> usize {
    let before = fake.calls_of(Op::ListPods).len();
    tokio::time::sleep(window).await;
    fake.calls_of(Op::ListPods).len() - before
}

#[test]
fn a_stream_that_loses_an_event_is_kept_with_relisting_at_the_normal_period_beside_it() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["a", "b"]).await;
        let h = evented_with(&fake, Duration::from_secs(60));
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 2
        })
        .await;
        h.events.take();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            relists_within(&fake, Duration::from_secs(20)).await == 0,
            "safety period only"
        );
        // Another subscriber takes this exit's event (containerd#7318).
        fake.lose_events(1);
        fake.exit_container(&ids[0], 3);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(h.events.len(), 0, "nothing reported it yet");
        until(
            "the safety relist finds the death",
            Duration::from_secs(20),
            || h.events.len() == 1,
        )
        .await;
        assert_eq!(h.events.take(), [named(ContainerDied, "a")]);
        tokio::time::sleep(super_grace()).await;
        let s = summary(&h);
        assert_eq!(s["events_lost"], 1);
        assert_eq!(s["stream_lossy"], true);
        assert_eq!(s["stream_open"], true);
        assert_eq!(s["mode"], "evented");
        let n = relists_within(&fake, Duration::from_secs(10)).await;
        assert!(
            (9..=11).contains(&n),
            "relisting every second beside the stream: {n}"
        );
        // What the stream still delivers is reported at once.
        fake.exit_container(&ids[1], 4);
        until("death from the stream", Duration::from_millis(100), || {
            h.events.len() == 1
        })
        .await;
        // Five minutes without a loss, and the safety period is back.
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert_eq!(summary(&h)["stream_lossy"], false);
        let n = relists_within(&fake, Duration::from_secs(50)).await;
        assert!(n <= 1, "safety period again: {n}");
    });
}

/// Longer than the loss detector's grace, so its judgement has run.
fn super_grace() -> Duration {
    Duration::from_secs(6)
}

#[test]
fn events_in_flight_when_a_relist_sees_their_change_are_no_loss() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["a"]).await;
        let h = evented_with(&fake, Duration::from_secs(60));
        first_relist(&h).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        // The relist runs first (the stream is slow), then the event arrives.
        fake.lose_events(1);
        fake.exit_container(&ids[0], 3);
        h.pleg.send(RelistNow).await.unwrap().unwrap();
        fake.remove_container(&ids[0]).await.unwrap();
        tokio::time::sleep(super_grace()).await;
        let s = summary(&h);
        assert_eq!(s["events_lost"], 0, "{s}");
        assert_eq!(s["stream_lossy"], false);
    });
}

#[test]
fn a_reopened_stream_is_followed_by_a_relist_that_finds_what_happened_meanwhile() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        let h = evented_with(&fake, Duration::from_secs(300));
        first_relist(&h).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        // The runtime restarts: the stream ends, and an exit happens before it is back.
        fake.fail_next(
            Op::Events,
            CriError::failed("GetContainerEvents", "connection refused"),
        );
        fake.fail_next(
            Op::ListPods,
            CriError::failed("ListPodSandbox", "connection refused"),
        );
        fake.end_event_streams();
        tokio::time::sleep(Duration::from_millis(10)).await;
        fake.exit_container(&ids[0], 5);
        let t0 = Instant::now();
        until(
            "the death, found by the relist after reopening",
            Duration::from_secs(5),
            || h.events.len() == 1,
        )
        .await;
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        until("the stream back", Duration::from_secs(3), || {
            summary(&h)["stream_open"] == true
        })
        .await;
        assert_eq!(
            fake.calls_of(Op::Events).len(),
            3,
            "the first stream, one failed reopening, one that worked"
        );
        assert_eq!(summary(&h)["stream_open"], true);
        assert_eq!(mode_of(&h), "evented");
        let cached = h.cache.send(GetStatus { uid: "u1".into() }).await.unwrap();
        assert_eq!(cached.status.container("job").unwrap().exit_code, 5);
    });
}

#[test]
fn after_falling_back_the_stream_is_probed_and_used_once_it_works() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (_, ids) = start_pod(&fake, "u1", &["job"]).await;
        refuse_streams(&fake, 2);
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                max_stream_retries: 2,
                relist_period: Duration::from_secs(1),
                stream_probe_period: Duration::from_secs(60),
                safety_relist_period: Duration::from_secs(300),
                ..PlegConfig::default()
            },
        );
        until("relisting mode", Duration::from_secs(5), || {
            mode_of(&h) == "relist"
        })
        .await;
        until("the probe's stream", Duration::from_secs(62), || {
            fake.calls_of(Op::Events).len() == 3
        })
        .await;
        until("evented again", Duration::from_secs(2), || {
            mode_of(&h) == "evented"
        })
        .await;
        assert!(h.health.check().is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            relists_within(&fake, Duration::from_secs(30)).await == 0,
            "safety period"
        );
        h.events.take();
        fake.exit_container(&ids[0], 1);
        until("death from the stream", Duration::from_millis(100), || {
            h.events.len() == 1
        })
        .await;
    });
}

#[test]
fn a_runtime_that_cannot_stream_is_probed_each_period_without_leaving_relisting() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new(); // Unimplemented, like containerd 1.6
        start_pod(&fake, "u1", &["web"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                relist_period: Duration::from_secs(1),
                stream_probe_period: Duration::from_secs(60),
                ..PlegConfig::default()
            },
        );
        tokio::time::sleep(Duration::from_secs(125)).await;
        assert_eq!(
            fake.calls_of(Op::Events).len(),
            3,
            "start, and a probe a minute"
        );
        assert_eq!(mode_of(&h), "relist");
        let n = relists_within(&fake, Duration::from_secs(10)).await;
        assert!((9..=11).contains(&n), "{n}");
    });
}

#[test]
fn events_and_listings_of_pods_another_node_owns_are_ignored() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        start_pod_of(&fake, Some("n1"), "mine", &["a"]).await;
        let (_, theirs) = start_pod_of(&fake, Some("n2"), "theirs", &["b"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                node: Some("n1".into()),
                ..PlegConfig::default()
            },
        );
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 1
        })
        .await;
        assert_eq!(h.events.take(), [named(ContainerStarted, "a")]);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let inspections = fake.inspections().len();
        fake.exit_container(&theirs[0], 1);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(h.events.len(), 0);
        assert_eq!(fake.inspections().len(), inspections, "not inspected");
        let s = summary(&h);
        assert_eq!(s["events_ignored"], 1);
        assert_eq!(s["pods_tracked"], 1);
        let (_, mine) = start_pod_of(&fake, Some("n1"), "mine2", &["c"]).await;
        until("my new pod's start", Duration::from_millis(100), || {
            h.events.len() == 1
        })
        .await;
        fake.exit_container(&mine[0], 2);
        until("my pod's death", Duration::from_millis(100), || {
            h.events.len() == 2
        })
        .await;
    });
}

#[test]
fn a_start_seen_by_a_targeted_inspection_but_never_streamed_is_a_loss() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let h = evented_with(&fake, Duration::from_secs(300));
        tokio::time::sleep(Duration::from_secs(2)).await;
        // A worker starts a pod's containers (the create's event arrives, the start's is
        // taken by another subscriber), then asks for a re-inspection, as after a sync.
        let sb = podvisor_cri::sample::sandbox_config("u1", "u1", false, "/logs");
        let sandbox = fake.run_sandbox(&sb).await.unwrap();
        let config = podvisor_cri::sample::container_config(&sb, "web", &["x"]);
        let id = fake.create_container(&sandbox, &config, &sb).await.unwrap();
        fake.lose_events(1);
        fake.start_container(&id).await.unwrap();
        h.pleg
            .send(Reinspect::pod("u1".into()))
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(super_grace()).await;
        let s = summary(&h);
        assert_eq!(s["events_lost"], 1, "{s}");
        assert_eq!(s["stream_lossy"], true);
        let n = relists_within(&fake, Duration::from_secs(10)).await;
        assert!((9..=11).contains(&n), "{n}");
    });
}

/// The next `n` attempts to open the event stream fail, as against a runtime that is down.
fn refuse_streams(fake: &FakeRuntime, n: usize) {
    for _ in 0..n {
        fake.fail_next(
            Op::Events,
            CriError::failed("GetContainerEvents", "connection refused"),
        );
    }
}

#[test]
fn an_event_whose_pod_hangs_the_runtime_holds_up_no_other_pods_events() {
    paused_system().block_on(async {
        // Events without their statuses: each is followed by its pod's inspection.
        let fake = FakeRuntime::new()
            .with_event_stream()
            .without_event_snapshots();
        let (_, stuck) = start_pod(&fake, "stuck", &["app"]).await;
        let (_, fine) = start_pod(&fake, "fine", &["job"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                ..manual()
            },
        );
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 2
        })
        .await;
        h.events.take();
        fake.set_target_delay(Op::PodStatus, "stuck", Some(Duration::from_secs(120)));
        // The stuck pod's event comes first; before, its inspection held the PLEG for the
        // whole bound (2 s) and the other pod's event waited behind it.
        fake.exit_container(&stuck[0], 1);
        fake.exit_container(&fine[0], 3);
        let t0 = Instant::now();
        until("the other pod's death", Duration::from_secs(5), || {
            h.events.len() == 1
        })
        .await;
        assert!(
            t0.elapsed() < Duration::from_millis(100),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(h.events.take(), [named(ContainerDied, "job")]);
        until(
            "the stuck pod inspected aside",
            Duration::from_secs(3),
            || {
                let s = summary(&h);
                s["slow_pods"] == 1 && s["events_inspecting"] == 0
            },
        )
        .await;
    });
}

#[test]
fn a_request_after_a_start_waits_briefly_for_its_event_and_inspects_only_without_it() {
    use podvisor_cri::sample::{container_config, sandbox_config};
    use podvisor_kubelet::pleg::START_EVENT_WAIT;
    use podvisor_kubelet::protocol::cache::ContainerId;
    paused_system().block_on(async {
        let fake = FakeRuntime::new().with_event_stream();
        let (sandbox, ids) = start_pod(&fake, "u1", &["web"]).await;
        let h = harness(
            fake.clone(),
            PlegConfig {
                mode: PlegMode::Evented,
                ..manual()
            },
        );
        until("first relist", Duration::from_secs(1), || {
            h.events.len() == 1
        })
        .await;
        let after = |id: &str| Reinspect {
            uid: "u1".into(),
            started: Some(ContainerId(id.into())),
        };
        let inspected = || fake.calls_of(Op::PodStatus).len();
        // A start the records show: answered at once, nothing inspected.
        let t = Instant::now();
        h.pleg.send(after(&ids[0])).await.unwrap().unwrap();
        assert_eq!((inspected(), t.elapsed()), (0, Duration::ZERO));
        // A start whose event comes while the request waits: answered by it.
        let sb = sandbox_config("u1", "u1", false, "/logs");
        let cfg = container_config(&sb, "side", &["x"]);
        let side = fake.create_container(&sandbox, &cfg, &sb).await.unwrap();
        let asked = h.pleg.send(after(&side));
        let start = async {
            tokio::task::yield_now().await;
            fake.start_container(&side).await.unwrap();
        };
        let (answer, ()) = tokio::join!(asked, start);
        answer.unwrap().unwrap();
        assert_eq!(inspected(), 0, "the event settled it");
        assert!(t.elapsed() < START_EVENT_WAIT);
        // A start the stream never shows (its event lost): inspected once the wait is over.
        h.pleg.send(after("never-started")).await.unwrap().unwrap();
        assert_eq!(inspected(), 1);
        assert!(t.elapsed() >= START_EVENT_WAIT);
        let summary = h.registry.get("pleg").unwrap().state.unwrap();
        assert_eq!(summary["reinspections_spared"], 2);
    });
}
