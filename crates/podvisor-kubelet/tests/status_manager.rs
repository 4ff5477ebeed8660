//! The status manager as an actor: it follows the status cache (a pod shows Running as soon
//! as the runtime says so, without another sync), keeps the newest runtime status, merges
//! the syncs' waiting reasons, and persists off its thread so a restart reloads it.

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use podvisor_actors::{ActorRef, ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_core::{PodUid, SharedPod};
use podvisor_cri::{
    ContainerState, ContainerStatus, PodRef, PodStatus, SandboxState, SandboxStatus,
};
use podvisor_kubelet::protocol::cache::{CachedStatus, StatusChanged};
use podvisor_kubelet::protocol::status::{ListPods, PodRecord, PodSynced, Waiting, WaitingReason};
use podvisor_kubelet::status_manager::StatusManager;
use support::*;
use tokio::time::Instant;

const UID: &str = "sm-0001";

fn pod() -> SharedPod {
    SharedPod::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": UID},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]},
        }))
        .unwrap(),
    )
    .unwrap()
}

fn runtime(state: ContainerState) -> Arc<PodStatus> {
    let pod = PodRef {
        uid: UID.into(),
        name: "web".into(),
        namespace: "default".into(),
    };
    Arc::new(PodStatus {
        pod: pod.clone(),
        ips: vec!["10.88.0.9".into()],
        sandboxes: vec![SandboxStatus {
            id: "sb".into(),
            pod,
            attempt: 0,
            state: SandboxState::Ready,
            created_at: 1,
            ip: Some("10.88.0.9".into()),
            additional_ips: vec![],
            host_network: false,
            labels: Default::default(),
            annotations: Default::default(),
        }],
        containers: vec![ContainerStatus {
            id: "c1".into(),
            sandbox_id: "sb".into(),
            name: "app".into(),
            attempt: 0,
            state,
            created_at: 2,
            started_at: 3,
            finished_at: if state == ContainerState::Exited {
                4
            } else {
                0
            },
            exit_code: 1,
            image: "busybox".into(),
            image_ref: "sha256:x".into(),
            reason: String::new(),
            message: String::new(),
            labels: Default::default(),
            annotations: Default::default(),
            log_path: String::new(),
        }],
    })
}

fn changed(status: Arc<PodStatus>, at: Instant) -> StatusChanged {
    StatusChanged {
        uid: PodUid::from(UID),
        data: CachedStatus {
            status,
            error: None,
            modified: Some(at),
        },
    }
}

fn start(dir: PathBuf) -> ActorRef<StatusManager> {
    let (sm, spec) = ChildSpec::of(move || StatusManager::new(dir.clone())).build();
    start_root(
        "root",
        SupervisorConfig::default(),
        Registry::new(),
        vec![spec],
        |e| panic!("escalated: {e:?}"),
    );
    sm
}

async fn the_pod(sm: &ActorRef<StatusManager>) -> PodRecord {
    let mut pods = sm.send(ListPods).await.unwrap();
    assert_eq!(pods.len(), 1);
    pods.remove(0)
}

async fn phase(sm: &ActorRef<StatusManager>) -> String {
    let r = the_pod(sm).await;
    r.pod.status.as_ref().unwrap().phase.clone().unwrap()
}

fn app_state(r: &PodRecord) -> serde_json::Value {
    let s = r.pod.status.as_ref().unwrap();
    serde_json::to_value(&s.container_statuses.as_ref().unwrap()[0].state).unwrap()
}

#[test]
fn a_pod_shows_running_when_the_cache_says_so_without_another_sync() {
    let dir = std::env::temp_dir().join(format!("podvisor-sm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    paused_system().block_on(async {
        let sm = start(dir.clone());
        // The sync's report before it acts: nothing runs yet.
        sm.do_send(PodSynced {
            pod: pod(),
            waiting: HashMap::new(),
        });
        assert_eq!(phase(&sm).await, "Pending");
        // The PLEG stores the runtime's news in the cache; that is all it takes.
        let t1 = Instant::now();
        sm.do_send(changed(runtime(ContainerState::Running), t1));
        assert_eq!(phase(&sm).await, "Running");
        // Older news never overwrites newer.
        sm.do_send(changed(
            runtime(ContainerState::Exited),
            t1 - Duration::from_millis(1),
        ));
        assert_eq!(phase(&sm).await, "Running");
        // A crash, then the sync that finds it backing off: the waiting reason is merged
        // with the cache's status.
        tokio::time::sleep(Duration::from_millis(5)).await;
        sm.do_send(changed(runtime(ContainerState::Exited), Instant::now()));
        let waiting = Waiting::new(WaitingReason::CrashLoopBackOff, "back-off 10s".into());
        sm.do_send(PodSynced {
            pod: pod(),
            waiting: HashMap::from([("app".to_string(), waiting)]),
        });
        let r = the_pod(&sm).await;
        assert_eq!(app_state(&r)["waiting"]["reason"], "CrashLoopBackOff");
        // Written off the actor thread, and reloaded by a new instance.
        let file = dir.join(format!("{UID}.json"));
        until("status written", Duration::from_secs(5), || file.exists()).await;
        until("newest written", Duration::from_secs(5), || {
            std::fs::read_to_string(&file).is_ok_and(|t| t.contains("CrashLoopBackOff"))
        })
        .await;
        let again = start(dir.clone());
        assert_eq!(
            app_state(&the_pod(&again).await)["waiting"]["reason"],
            "CrashLoopBackOff"
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_finished_pod_stays_finished_when_its_containers_are_removed() {
    let dir = std::env::temp_dir().join(format!("podvisor-sm-done-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    paused_system().block_on(async {
        let sm = start(dir.clone());
        let once = SharedPod::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default", "uid": UID},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox"}]},
            }))
            .unwrap(),
        )
        .unwrap();
        sm.do_send(PodSynced {
            pod: once,
            waiting: HashMap::new(),
        });
        let mut exited = (*runtime(ContainerState::Exited)).clone();
        exited.containers[0].exit_code = 0;
        sm.do_send(changed(Arc::new(exited), Instant::now()));
        assert_eq!(phase(&sm).await, "Succeeded");
        // The terminated pod is cleaned up: the runtime has nothing of it any more.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let gone = PodStatus {
            sandboxes: vec![],
            containers: vec![],
            ..(*runtime(ContainerState::Exited)).clone()
        };
        sm.do_send(changed(Arc::new(gone), Instant::now()));
        assert_eq!(phase(&sm).await, "Succeeded", "not Pending again");
        let r = the_pod(&sm).await;
        assert_eq!(app_state(&r)["terminated"]["exitCode"], 0, "its last container state stays");
    });
    let _ = std::fs::remove_dir_all(&dir);
}
