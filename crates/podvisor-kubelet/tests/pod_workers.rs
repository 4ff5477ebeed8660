//! The pod workers as actors: dispatcher, one worker per pod, the status cache and the
//! PLEG, on the fake runtime with paused time.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use podvisor_actors::testing::{Collected, collector};
use podvisor_actors::{ActorRef, ChildSpec, Lifecycle, Registry, SupervisorConfig, start_root};
use podvisor_core::{GracePeriod, SharedPod};
use podvisor_cri::FakeRuntime;
use podvisor_cri::fake::Op;
use podvisor_kubelet::groups::{PodWorkerWiring, StatusWiring, pod_worker_group, status_group};
use podvisor_kubelet::pleg::{PlegConfig, PlegMode};
use podvisor_kubelet::pod_workers::{PodWorkers, Timings};
use podvisor_kubelet::protocol::lifecycle::PodLifecycleEvent;
use podvisor_kubelet::protocol::status::RecordEvent;
use podvisor_kubelet::protocol::updates::{
    KillPodOptions, UpdatePod, UpdatePodOptions, UpdateType,
};
use podvisor_kubelet::protocol::work::WorkKind;
use support::*;

struct World {
    fake: FakeRuntime,
    syncer: FakeSyncer,
    registry: Arc<Registry>,
    dispatcher: ActorRef<PodWorkers>,
    desired: Arc<Mutex<Vec<SharedPod>>>,
    pod_events: Collected<RecordEvent>,
}

fn world(fake: FakeRuntime, syncer: FakeSyncer) -> World {
    world_with(fake, syncer, PlegMode::Evented)
}

fn world_with(fake: FakeRuntime, syncer: FakeSyncer, mode: PlegMode) -> World {
    let registry = Registry::new();
    let (events, events_spec, _) = collector::<PodLifecycleEvent>();
    let (pod_events, pod_events_spec, collected) = collector::<RecordEvent>();
    let status = status_group(
        &registry,
        StatusWiring {
            runtime: Arc::new(fake.clone()),
            events: vec![events.recipient()],
            statuses: Vec::new(),
            pleg: PlegConfig {
                relist_period: Duration::from_secs(3600),
                mode,
                ..PlegConfig::default()
            },
        },
        SupervisorConfig::default(),
    );
    let desired: Arc<Mutex<Vec<SharedPod>>> = Arc::default();
    let d = desired.clone();
    let (source, source_spec) = ChildSpec::of(move || Desired(d.clone())).build();
    let group = pod_worker_group(
        &registry,
        PodWorkerWiring {
            syncer: Arc::new(syncer.clone()),
            runtime: Arc::new(fake.clone()),
            cache: status.cache.recipient(),
            cache_get: status.cache.recipient(),
            reinspect: status.pleg.recipient(),
            desired: Some(source.recipient()),
            events: Some(pod_events.recipient()),
            timings: Timings::default(),
            status_wait: Duration::from_secs(2),
            node_name: podvisor_cri::sample::SAMPLE_OWNER.into(),
            metrics: Default::default(),
        },
        SupervisorConfig::default(),
    );
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![
            events_spec,
            pod_events_spec,
            source_spec,
            status.spec,
            group.spec,
        ],
        |e| panic!("escalated: {e:?}"),
    );
    World {
        fake,
        syncer,
        registry,
        dispatcher: group.dispatcher,
        desired,
        pod_events: collected,
    }
}

fn pod(uid: &str) -> SharedPod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.into());
    p.metadata.name = Some(uid.into());
    p.metadata.namespace = Some("default".into());
    p.spec = Some(PodSpec {
        termination_grace_period_seconds: Some(30),
        ..Default::default()
    });
    SharedPod::new(p).unwrap()
}

#[test]
fn a_pod_lives_its_whole_life_through_the_actors() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let w = world(fake.clone(), FakeSyncer::with_runtime(fake.clone()));
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Create,
            pod("u1"),
        )));
        until("first sync", Duration::from_secs(5), || {
            w.syncer.calls_for("u1").len() == 1
        })
        .await;
        // The sync started a container; the next sync must see it without a relist (the
        // relist period is an hour): the worker asked the PLEG to re-inspect.
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Sync,
            pod("u1"),
        )));
        until("second sync", Duration::from_secs(5), || {
            w.syncer.calls_for("u1").len() == 2
        })
        .await;
        assert_eq!(w.syncer.calls_for("u1")[1].containers_seen, 1);
        let worker = w.registry.get("pod-worker/u1").unwrap();
        assert_eq!(worker.parent.unwrap().as_str(), "supervisor/pod-workers");
        let summary = worker.state.unwrap();
        assert_eq!(summary["phase"], "syncing");
        assert_eq!(summary["last_result"], "Sync ok");

        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::kill(
            pod("u1"),
            KillPodOptions {
                grace_period_override: Some(GracePeriod::from_seconds(5)),
                ..Default::default()
            },
        )));
        until("terminated", Duration::from_secs(5), || {
            w.syncer.calls_for("u1").len() == 4
        })
        .await;
        let calls = w.syncer.calls_for("u1");
        assert_eq!(
            calls.iter().map(|c| c.kind).collect::<Vec<_>>(),
            [
                WorkKind::Sync,
                WorkKind::Sync,
                WorkKind::Terminating,
                WorkKind::Terminated
            ]
        );
        assert_eq!(calls[2].grace, Some(5));
        until("worker stopped", Duration::from_secs(5), || {
            !w.registry.contains("pod-worker/u1")
        })
        .await;
        // The PLEG was asked for status after each sync that changed the runtime: the
        // first, the termination, the removal (a UID that comes back must not start from
        // what was there before it). Not before the first sync (it takes what the cache
        // holds) nor before the kill (it stops what the cache shows running).
        assert_eq!(w.fake.calls_of(podvisor_cri::fake::Op::PodStatus).len(), 3);
    });
}

#[test]
fn a_kill_cancels_a_sync_in_flight() {
    paused_system().block_on(async {
        let syncer = FakeSyncer::default();
        syncer.block("u1");
        let w = world(FakeRuntime::new(), syncer.clone());
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Create,
            pod("u1"),
        )));
        until("sync started", Duration::from_secs(5), || {
            syncer.calls_for("u1").len() == 1
        })
        .await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(
            syncer.calls_for("u1").len(),
            1,
            "still stuck in the first sync"
        );
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::kill(
            pod("u1"),
            KillPodOptions::default(),
        )));
        until("terminated", Duration::from_secs(5), || {
            syncer.kinds_for("u1").len() == 3
        })
        .await;
        assert_eq!(
            syncer.kinds_for("u1"),
            [WorkKind::Sync, WorkKind::Terminating, WorkKind::Terminated]
        );
    });
}

#[test]
fn a_crashed_worker_carries_on_with_the_newest_update() {
    paused_system().block_on(async {
        let syncer = FakeSyncer::default();
        syncer.block("u1");
        let w = world(FakeRuntime::new(), syncer.clone());
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Create,
            pod("u1"),
        )));
        until("sync started", Duration::from_secs(5), || {
            syncer.calls_for("u1").len() == 1
        })
        .await;
        // An update waits behind the stuck sync; then the worker crashes.
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Update,
            pod("u1"),
        )));
        tokio::time::sleep(Duration::from_millis(10)).await;
        syncer.unblock("u1");
        assert!(w.registry.inject_panic("pod-worker/u1", "test"));
        until("resynced", Duration::from_secs(5), || {
            syncer
                .calls_for("u1")
                .iter()
                .any(|c| c.update == Some(UpdateType::Update))
        })
        .await;
        assert_eq!(w.registry.get("pod-worker/u1").unwrap().mailbox.restarts, 1);
        assert!(
            syncer.kinds_for("u1").iter().all(|k| *k == WorkKind::Sync),
            "no pod was killed"
        );
    });
}

#[test]
fn a_pod_whose_worker_keeps_crashing_is_held_back_alone_and_the_others_go_on() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let w = world(fake.clone(), FakeSyncer::with_runtime(fake.clone()));
        for uid in ["poison", "fine"] {
            w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
                UpdateType::Create,
                pod(uid),
            )));
        }
        until("both synced", Duration::from_secs(5), || {
            !w.syncer.calls_for("poison").is_empty() && !w.syncer.calls_for("fine").is_empty()
        })
        .await;
        let actor = |id: &str| w.registry.get(id).expect(id).mailbox;
        // Far more crashes than the supervisor's intensity (10 within 60 s) allows.
        let mut gaps = Vec::new();
        for i in 1..=16 {
            until("the worker running again", Duration::from_secs(600), || {
                actor("pod-worker/poison").lifecycle == Lifecycle::Running
            })
            .await;
            assert!(w.registry.inject_panic("pod-worker/poison", "poison"));
            let t0 = tokio::time::Instant::now();
            until("restarted", Duration::from_secs(600), || {
                let m = actor("pod-worker/poison");
                m.restarts == i && m.lifecycle == Lifecycle::Running
            })
            .await;
            gaps.push(t0.elapsed());
        }
        // Nothing escalated: the dispatcher and the other pod's worker never restarted.
        assert_eq!(actor("pod-workers").restarts, 0);
        assert_eq!(actor("supervisor/pod-workers").restarts, 0);
        assert_eq!(actor("pod-worker/fine").restarts, 0);
        // Past the intensity, the poison pod's restarts are held back beyond the group's
        // 5 s cap, growing each time.
        let last = gaps[gaps.len() - 1];
        assert!(
            last >= Duration::from_secs(40) && last > gaps[gaps.len() - 2],
            "{gaps:?}"
        );
        // The other pod still syncs.
        let before = w.syncer.calls_for("fine").len();
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Sync,
            pod("fine"),
        )));
        until("fine synced again", Duration::from_secs(5), || {
            w.syncer.calls_for("fine").len() > before
        })
        .await;
        // Each crash is told as the poison pod's event.
        let crashes: Vec<String> = w
            .pod_events
            .snapshot()
            .into_iter()
            .filter(|e| e.reason == "WorkerCrashed")
            .map(|e| format!("{} {}", e.pod.uid(), e.message))
            .collect();
        assert_eq!(crashes.len(), 16, "{crashes:?}");
        assert!(crashes.iter().all(|c| c.starts_with("poison ")));
        assert!(crashes[15].contains("(16 restarts)"), "{}", crashes[15]);
    });
}

#[test]
fn a_restarted_dispatcher_rebuilds_from_desired_pods_and_the_runtime() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        // Running before the restart: a desired pod and an orphan with podvisor's labels.
        start_pod(&fake, "wanted", &["app"]).await;
        start_pod(&fake, "orphan", &["app"]).await;
        let syncer = FakeSyncer::default();
        let w = world(fake.clone(), syncer.clone());
        w.desired.lock().unwrap().push(pod("wanted"));
        // The first start already rebuilds: the wanted pod syncs, the orphan is killed.
        until("rebuilt", Duration::from_secs(5), || {
            syncer.kinds_for("wanted") == [WorkKind::Sync]
                && syncer.kinds_for("orphan") == [WorkKind::Terminating]
        })
        .await;
        let before = syncer.calls().len();
        assert!(w.registry.inject_panic("pod-workers", "test"));
        until("dispatcher restarted", Duration::from_secs(5), || {
            w.registry
                .get("pod-workers")
                .is_some_and(|a| a.mailbox.restarts == 1)
        })
        .await;
        until("wanted pod synced again", Duration::from_secs(5), || {
            syncer.calls_for("wanted").len() == 2
        })
        .await;
        let after: Vec<_> = syncer.calls()[before..].to_vec();
        assert!(
            after
                .iter()
                .all(|c| c.uid != "wanted" || c.kind == WorkKind::Sync),
            "a restart alone kills nothing: {after:?}"
        );
        assert!(syncer.calls_for("orphan")[0].runtime_only);
        let _ = w.fake;
    });
}

#[test]
fn failed_syncs_report_their_error_in_the_worker_summary() {
    paused_system().block_on(async {
        let syncer = FakeSyncer::default();
        syncer.fail_next("u1", 1);
        let w = world(FakeRuntime::new(), syncer.clone());
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Create,
            pod("u1"),
        )));
        until("summary", Duration::from_secs(5), || {
            w.registry
                .get("pod-worker/u1")
                .and_then(|a| a.state)
                .is_some_and(|s| s["last_result"] == "Sync failed: injected failure")
        })
        .await;
    });
}

/// Resyncs and retries are the dispatcher's own: with no sync loop at all, a failed sync is
/// tried again after the backoff, and so is a failed termination, until the pod is gone.
#[test]
fn the_dispatcher_retries_failed_syncs_and_terminations_by_itself() {
    paused_system().block_on(async {
        let syncer = FakeSyncer::default();
        let w = world(FakeRuntime::new(), syncer.clone());
        syncer.fail_next("u1", 1);
        let t0 = tokio::time::Instant::now();
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
            UpdateType::Create,
            pod("u1"),
        )));
        until("retried", Duration::from_secs(30), || {
            syncer.calls_for("u1").len() == 2
        })
        .await;
        // The default backoff is 10 s; nothing but the dispatcher's queue sent it again.
        assert!(
            t0.elapsed() >= Duration::from_secs(10),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(syncer.calls_for("u1")[1].update, Some(UpdateType::Sync));
        // A termination that fails twice (a StopContainer that times out) is retried until
        // it succeeds, then cleaned up.
        syncer.fail_next("u1", 2);
        w.dispatcher.do_send(UpdatePod(UpdatePodOptions::kill(
            pod("u1"),
            KillPodOptions::default(),
        )));
        until("terminated", Duration::from_secs(60), || {
            syncer.kinds_for("u1").last() == Some(&WorkKind::Terminated)
        })
        .await;
        assert_eq!(
            syncer.kinds_for("u1"),
            [
                WorkKind::Sync,
                WorkKind::Sync,
                WorkKind::Terminating,
                WorkKind::Terminating,
                WorkKind::Terminating,
                WorkKind::Terminated
            ]
        );
        until("worker stopped", Duration::from_secs(5), || {
            !w.registry.contains("pod-worker/u1")
        })
        .await;
        // Finished: nothing is scheduled for it any more.
        let dispatcher = w.registry.get("pod-workers").unwrap();
        assert_eq!(dispatcher.state.unwrap()["scheduled"], 0);
    });
}

#[test]
fn a_sync_after_one_that_changed_nothing_does_not_wait_for_newer_status() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let w = world(fake.clone(), FakeSyncer::with_runtime(fake.clone()));
        let sync = |n: usize| {
            w.dispatcher.do_send(UpdatePod(UpdatePodOptions::new(
                if n == 0 {
                    UpdateType::Create
                } else {
                    UpdateType::Sync
                },
                pod("u1"),
            )));
        };
        // The first sync starts a container; the second sees it (the worker asked the PLEG)
        // and changes nothing.
        for n in 0..2 {
            sync(n);
            until("sync", Duration::from_secs(5), || {
                w.syncer.calls_for("u1").len() == n + 1
            })
            .await;
        }
        // No relist for an hour, nothing new in the runtime: a third sync (an event, a
        // periodic resync) runs at once on the status the second acted on, rather than
        // waiting its 2 s for a newer one that is not coming.
        sync(2);
        until(
            "a third sync without the 2 s wait",
            Duration::from_millis(500),
            || w.syncer.calls_for("u1").len() == 3,
        )
        .await;
        assert_eq!(w.syncer.calls_for("u1")[2].containers_seen, 1);
    });
}

#[test]
fn a_start_whose_event_came_first_needs_no_inspection_for_the_next_sync() {
    for mode in [PlegMode::Evented, PlegMode::Relist] {
        paused_system().block_on(async {
            let fake = match mode {
                PlegMode::Evented => FakeRuntime::new().with_event_stream(),
                PlegMode::Relist => FakeRuntime::new(),
            };
            let w = world_with(fake.clone(), FakeSyncer::with_runtime(fake.clone()), mode);
            let pleg = || {
                w.registry
                    .get("pleg")
                    .and_then(|p| p.state)
                    .unwrap_or_default()
            };
            until("the PLEG has begun", Duration::from_secs(2), || {
                pleg()["stream_open"] == (mode == PlegMode::Evented)
                    && !pleg()["last_relist_ms"].is_null()
            })
            .await;
            for (n, update) in [UpdateType::Create, UpdateType::Sync]
                .into_iter()
                .enumerate()
            {
                w.dispatcher
                    .do_send(UpdatePod(UpdatePodOptions::new(update, pod("u1"))));
                // Well within the 2 s a worker waits for fresh status before it gives up.
                until("sync", Duration::from_millis(500), || {
                    w.syncer.calls_for("u1").len() == n + 1
                })
                .await;
            }
            // The second sync saw the container the first one started.
            assert_eq!(w.syncer.calls_for("u1")[1].containers_seen, 1, "{mode:?}");
            let pleg = pleg();
            let inspected = fake.calls_of(Op::PodStatus).len();
            match mode {
                // The start's event (and the statuses it carried) came before the worker's
                // request: no inspection.
                PlegMode::Evented => {
                    assert_eq!(
                        (inspected, &pleg["reinspections_spared"]),
                        (0, &1.into()),
                        "{pleg}"
                    );
                }
                // No events, no relist for an hour: the request is what inspects the pod.
                PlegMode::Relist => {
                    assert_eq!((inspected, &pleg["reinspections_spared"]), (1, &0.into()));
                }
            }
        });
    }
}
