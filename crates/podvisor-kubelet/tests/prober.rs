//! The prober actor on the fake runtime, with paused time: it learns a pod's probes from
//! its sync and its instances from the status cache, tells readiness changes and events,
//! asks for a sync when a liveness probe fails, and after a crash relearns everything from
//! the desired pods and the cache and probes on.

mod support;

use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::testing::{Collected, collector};
use podvisor_actors::{ChildSpec, SupervisorConfig, start_root};
use podvisor_core::SharedPod;
use podvisor_cri::FakeRuntime;
use podvisor_kubelet::groups::StatusWiring;
use podvisor_kubelet::prober::{Prober, ProberDeps};
use podvisor_kubelet::protocol::lifecycle::RelistNow;
use podvisor_kubelet::protocol::probes::{ProbeChanged, ProbeSync, SyncProbes};
use podvisor_kubelet::protocol::status::RecordEvent;
use podvisor_probe::ProbeKind;
use support::{Desired, manual, paused_system, start_pod_of, until};

fn pod() -> SharedPod {
    let p = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
        "spec": {"containers": [{"name": "app", "image": "i",
            "readinessProbe": {"exec": {"command": ["ready"]}, "periodSeconds": 1, "failureThreshold": 1},
            "livenessProbe": {"exec": {"command": ["alive"]}, "periodSeconds": 5, "failureThreshold": 1}}]}
    }))
    .unwrap();
    SharedPod::new(p).unwrap()
}

fn readiness(c: &Collected<ProbeChanged>) -> Vec<bool> {
    c.snapshot()
        .iter()
        .filter(|r| r.0.kind == ProbeKind::Readiness)
        .map(|r| r.0.passed)
        .collect()
}

#[test]
fn the_prober_reports_changes_asks_for_syncs_and_probes_on_after_a_crash() {
    paused_system().block_on(async {
        let fake = FakeRuntime::new();
        let registry = podvisor_actors::Registry::new();
        let (results, results_spec, changed) = collector::<ProbeChanged>();
        let (events, events_spec, recorded) = collector::<RecordEvent>();
        let (sync, sync_spec, syncs) = collector::<ProbeSync>();
        let pods = Arc::new(std::sync::Mutex::new(vec![pod()]));
        let (desired, desired_spec) = ChildSpec::of(move || Desired(pods.clone())).build();
        let late: Arc<std::sync::OnceLock<Arc<ProberDeps>>> = Arc::default();
        let l = late.clone();
        let (prober, prober_spec) =
            ChildSpec::of(move || Prober::new(l.get().unwrap().clone())).build();
        let status = podvisor_kubelet::groups::status_group(
            &registry,
            StatusWiring {
                runtime: Arc::new(fake.clone()),
                events: Vec::new(),
                statuses: vec![prober.recipient()],
                pleg: manual(),
            },
            SupervisorConfig::default(),
        );
        let _ = late.set(Arc::new(ProberDeps {
            runtime: Arc::new(fake.clone()),
            results: results.recipient(),
            events: events.recipient(),
            sync: sync.recipient(),
            desired: desired.recipient(),
            cache: status.cache.recipient(),
            limits: podvisor_kubelet::prober::DEFAULT_LIMITS,
            metrics: Default::default(),
        }));
        start_root(
            "root",
            SupervisorConfig::default(),
            registry.clone(),
            vec![
                results_spec,
                events_spec,
                sync_spec,
                desired_spec,
                status.spec,
                prober_spec,
            ],
            |e| panic!("escalated: {e:?}"),
        );
        let (_, ids) = start_pod_of(&fake, None, "u1", &["app"]).await;
        status.pleg.send(RelistNow).await.unwrap().unwrap();
        let verdicts = prober.send(SyncProbes { pod: pod() }).await.unwrap();
        assert!(verdicts.failed.is_empty());
        until("ready", Duration::from_secs(5), || {
            readiness(&changed) == [true]
        })
        .await;

        fake.set_exec_exit(&ids[0], 1);
        until("unready", Duration::from_secs(5), || {
            readiness(&changed) == [true, false]
        })
        .await;
        until(
            "the liveness failure asks for a sync",
            Duration::from_secs(10),
            || syncs.snapshot().iter().any(|s| s.uid.as_str() == "u1"),
        )
        .await;
        let verdicts = prober.send(SyncProbes { pod: pod() }).await.unwrap();
        assert_eq!(verdicts.failed[&ids[0]].kind, ProbeKind::Liveness);
        let said: Vec<String> = recorded
            .snapshot()
            .iter()
            .map(|e| e.message.clone())
            .collect();
        assert!(
            said.iter().any(|m| m.starts_with("Readiness probe failed")),
            "{said:?}"
        );

        // A crash: the new instance relearns the pod and its container, and probes on.
        assert!(registry.inject_panic("prober", "test"));
        fake.set_exec_exit(&ids[0], 0);
        until(
            "ready again after the restart",
            Duration::from_secs(10),
            || readiness(&changed).last() == Some(&true),
        )
        .await;
        assert_eq!(registry.get("prober").unwrap().mailbox.restarts, 1);
    });
}
