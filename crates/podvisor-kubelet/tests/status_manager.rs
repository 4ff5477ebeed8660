//! The status manager as an actor: it follows the status cache (a pod shows Running as soon
//! as the runtime says so, without another sync), keeps the newest runtime status, merges
//! the syncs' waiting reasons, publishes every change, and a restarted one starts from the
//! statuses its API holds.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::testing::paused_system;
use podvisor_actors::{
    ActorRef, ChildSpec, Registry, StartInfo, SupervisedActor, SupervisorConfig, start_root,
};
use podvisor_core::{PodUid, SharedPod};
use podvisor_cri::{
    ContainerState, ContainerStatus, PodRef, PodStatus, SandboxState, SandboxStatus,
};
use podvisor_kubelet::protocol::cache::{CachedStatus, StatusChanged};
use podvisor_kubelet::protocol::status::{
    FinishedPods, PodSynced, PriorStatuses, PublishedStatus, RepublishStatuses, Waiting,
    WaitingReason,
};
use podvisor_kubelet::status_manager::StatusManager;
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
            user: None,
            resources: None,
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

/// The API the status manager writes to (through its sink) and starts from: the newest
/// published status of each pod, answered as the prior statuses.
#[derive(Default)]
struct FakeApi {
    pods: HashMap<String, Arc<Pod>>,
}

impl Actor for FakeApi {
    type Context = Context<Self>;
}

impl SupervisedActor for FakeApi {
    const KIND: &'static str = "fake-api";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

impl Handler<PublishedStatus> for FakeApi {
    type Result = ();
    fn handle(&mut self, msg: PublishedStatus, _: &mut Context<Self>) {
        if let PublishedStatus::Changed { pod, status, .. } = msg {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let mut stored = (*pod).clone();
            stored.status = Some((*status).clone());
            self.pods.insert(uid, Arc::new(stored));
        }
    }
}

impl Handler<PriorStatuses> for FakeApi {
    type Result = MessageResult<PriorStatuses>;
    fn handle(&mut self, _: PriorStatuses, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.pods.values().cloned().collect())
    }
}

fn api() -> ActorRef<FakeApi> {
    ChildSpec::of(FakeApi::default).start_unsupervised()
}

/// A status manager that starts from `prior`'s statuses and publishes to `sink`.
fn start(prior: &ActorRef<FakeApi>, sink: &ActorRef<FakeApi>) -> ActorRef<StatusManager> {
    let (sink, prior) = (sink.recipient(), prior.recipient());
    let (sm, spec) = ChildSpec::of(move || {
        StatusManager::new()
            .with_sink(Some(sink.clone()))
            .with_prior(Some(prior.clone()))
    })
    .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        Registry::new(),
        vec![spec],
        |e| panic!("escalated: {e:?}"),
    );
    sm
}

/// The pod as the status manager last published it (once everything sent to it before
/// has been handled: `FinishedPods` is answered in order).
async fn the_pod(sm: &ActorRef<StatusManager>, api: &ActorRef<FakeApi>) -> Arc<Pod> {
    sm.send(FinishedPods).await.unwrap();
    let mut pods = api.send(PriorStatuses).await.unwrap();
    assert_eq!(pods.len(), 1);
    pods.remove(0)
}

async fn phase(sm: &ActorRef<StatusManager>, api: &ActorRef<FakeApi>) -> String {
    let p = the_pod(sm, api).await;
    p.status.as_ref().unwrap().phase.clone().unwrap()
}

fn app_state(p: &Pod) -> serde_json::Value {
    let s = p.status.as_ref().unwrap();
    serde_json::to_value(&s.container_statuses.as_ref().unwrap()[0].state).unwrap()
}

#[test]
fn a_pod_shows_running_when_the_cache_says_so_without_another_sync() {
    paused_system().block_on(async {
        let api = api();
        let sm = start(&api, &api);
        // The sync's report before it acts: nothing runs yet.
        sm.do_send(PodSynced {
            pod: pod(),
            waiting: HashMap::new(),
            resize_error: None,
        });
        assert_eq!(phase(&sm, &api).await, "Pending");
        // The PLEG stores the runtime's news in the cache; that is all it takes.
        let t1 = Instant::now();
        sm.do_send(changed(runtime(ContainerState::Running), t1));
        assert_eq!(phase(&sm, &api).await, "Running");
        // Older news never overwrites newer.
        sm.do_send(changed(
            runtime(ContainerState::Exited),
            t1 - Duration::from_millis(1),
        ));
        assert_eq!(phase(&sm, &api).await, "Running");
        // A crash, then the sync that finds it backing off: the waiting reason is merged
        // with the cache's status.
        tokio::time::sleep(Duration::from_millis(5)).await;
        sm.do_send(changed(runtime(ContainerState::Exited), Instant::now()));
        let waiting = Waiting::new(WaitingReason::CrashLoopBackOff, "back-off 10s".into());
        sm.do_send(PodSynced {
            pod: pod(),
            waiting: HashMap::from([("app".to_string(), waiting)]),
            resize_error: None,
        });
        let r = the_pod(&sm, &api).await;
        assert_eq!(app_state(&r)["waiting"]["reason"], "CrashLoopBackOff");
        // A new instance starts from what the API holds: asked to publish everything it
        // has (as a restarted status writer asks), it has that status, before any sync.
        let elsewhere = self::api();
        let again = start(&api, &elsewhere);
        again.send(RepublishStatuses).await.unwrap();
        assert_eq!(
            app_state(the_pod(&again, &elsewhere).await.as_ref())["waiting"]["reason"],
            "CrashLoopBackOff"
        );
    });
}

#[test]
fn a_finished_pod_stays_finished_when_its_containers_are_removed() {
    paused_system().block_on(async {
        let api = api();
        let sm = start(&api, &api);
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
            resize_error: None,
        });
        let mut exited = (*runtime(ContainerState::Exited)).clone();
        exited.containers[0].exit_code = 0;
        sm.do_send(changed(Arc::new(exited), Instant::now()));
        assert_eq!(phase(&sm, &api).await, "Succeeded");
        // The terminated pod is cleaned up: the runtime has nothing of it any more.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let gone = PodStatus {
            sandboxes: vec![],
            containers: vec![],
            ..(*runtime(ContainerState::Exited)).clone()
        };
        sm.do_send(changed(Arc::new(gone), Instant::now()));
        assert_eq!(phase(&sm, &api).await, "Succeeded", "not Pending again");
        let r = the_pod(&sm, &api).await;
        assert_eq!(app_state(&r)["terminated"]["exitCode"], 0, "its last container state stays");
        // A restarted instance knows it finished, from the API alone: the sync loop asks.
        let again = start(&api, &self::api());
        let finished = again.send(FinishedPods).await.unwrap();
        assert_eq!(
            finished.get(&PodUid::from(UID)).map(|p| p.as_str()),
            Some("Succeeded")
        );
    });
}
