//! The PLEG and status cache against a real containerd.

mod common;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use podvisor_actors::testing::collector;
use podvisor_actors::{Registry, SupervisorConfig, start_root};
use podvisor_cri::Runtime;
use podvisor_cri::sample::{container_config, sandbox_config};
use podvisor_kubelet::groups::{StatusWiring, status_group};
use podvisor_kubelet::pleg::{PlegConfig, PlegMode};
use podvisor_kubelet::protocol::cache::GetStatus;
use podvisor_kubelet::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};

#[test]
fn an_exit_with_code_7_is_a_container_death_with_code_7_in_the_cache() {
    actix::System::new().block_on(async {
        let rt = common::runtime().await;
        let uid = common::unique_uid("pleg7");
        let result = std::panic::AssertUnwindSafe(async {
            let registry = Registry::new();
            let (events_ref, events_spec, events) = collector::<PodLifecycleEvent>();
            // Evented mode falls back to relisting by itself on containerd 1.6; on 1.7 it
            // consumes the stream.
            let streams = common::runtime_streams_events().await;
            let mode = if streams { "evented" } else { "relist" };
            let config = PlegConfig {
                mode: PlegMode::Evented,
                relist_period: Duration::from_millis(100),
                ..PlegConfig::default()
            };
            let wiring = StatusWiring {
                runtime: Arc::new(rt.clone()),
                events: vec![events_ref.recipient()],
                statuses: Vec::new(),
                pleg: config,
            };
            let group = status_group(&registry, wiring, SupervisorConfig::default());
            start_root(
                "root",
                SupervisorConfig::default(),
                registry.clone(),
                vec![events_spec, group.spec],
                |e| panic!("escalated: {e:?}"),
            );
            // containerd 1.6 answers Unimplemented: relisting within a second of start-up.
            // containerd 1.7 streams: the stream is open and stays in use.
            let t0 = std::time::Instant::now();
            common::eventually(mode, Duration::from_secs(3), || async {
                registry
                    .get("pleg")
                    .and_then(|a| a.state)
                    .is_some_and(|s| s["mode"] == mode && s["stream_open"] == streams)
                    .then_some(())
            })
            .await;
            eprintln!("PLEG in {mode} mode after {:?}", t0.elapsed());

            let dir = common::log_dir(&uid);
            let sandbox = sandbox_config(&uid, "pleg7", true, dir.to_str().unwrap());
            let sandbox_id = rt.run_sandbox(&sandbox).await.unwrap();
            let config =
                container_config(&sandbox, "seven", &["/bin/sh", "-c", "sleep 0.5; exit 7"]);
            let id = rt
                .create_container(&sandbox_id, &config, &sandbox)
                .await
                .unwrap();
            rt.start_container(&id).await.unwrap();

            let mine = |kind| {
                let events = events.snapshot();
                events
                    .iter()
                    .any(|e| *e.uid == *uid && e.id == id && e.kind == kind)
            };
            // Where several subscribers share containerd 1.7's stream (parallel tests), an
            // event may be lost: the safety relist (10 s) finds it.
            common::eventually("ContainerStarted", Duration::from_secs(20), || async {
                mine(PlegEventKind::ContainerStarted).then_some(())
            })
            .await;
            common::eventually("ContainerDied", Duration::from_secs(20), || async {
                mine(PlegEventKind::ContainerDied).then_some(())
            })
            .await;
            let cached = group
                .cache
                .send(GetStatus {
                    uid: uid.as_str().into(),
                })
                .await
                .unwrap();
            let c = cached
                .status
                .container("seven")
                .expect("container in the cache");
            assert_eq!(c.exit_code, 7);
            assert_eq!(c.state, podvisor_cri::ContainerState::Exited);
            let pleg = registry.get("pleg").unwrap().state.unwrap();
            assert_eq!(pleg["mode"], mode, "{pleg}");
            if streams {
                assert!(pleg["events_received"].as_u64().unwrap() >= 2, "{pleg}");
            }
            assert_eq!(pleg["healthy"], true);
        })
        .catch_unwind()
        .await;
        common::remove_pod(&rt, &uid).await;
        if let Err(p) = result {
            std::panic::resume_unwind(p);
        }
    });
}
