//! The CRI syncer on the fake runtime: the call sequences containerd cannot be made to
//! produce on demand (a create whose start never happened). The ordinary paths are
//! proven against containerd by the agent's integration tests.

use std::path::PathBuf;
use std::sync::Arc;

use podvisor_actors::ChildSpec;
use podvisor_actors::testing::start_collector;
use podvisor_core::SharedPod;
use podvisor_cri::fake::Op;
use podvisor_cri::{ContainerState, ContainerStatus, CriError, FakeRuntime, PodStatus, Runtime};
use podvisor_kubelet::kuberuntime::config::NodeConfig;
use podvisor_kubelet::kuberuntime::images::ImageManager;
use podvisor_kubelet::kuberuntime::syncer::{CriSyncer, SyncerOutputs};
use podvisor_kubelet::protocol::sync::{PodSyncer, SyncContext};
use podvisor_kubelet::protocol::updates::UpdateType;

const UID: &str = "0b1c7d3e-syncer-test";

fn pod() -> SharedPod {
    SharedPod::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-n", "namespace": "default", "uid": UID},
            "spec": {
                "hostNetwork": true,
                "containers": [{
                    "name": "app",
                    "image": podvisor_cri::sample::TEST_IMAGE,
                    "command": ["sleep", "3600"],
                }],
            },
        }))
        .expect("a valid pod"),
    )
    .expect("a pod with a UID")
}

fn syncer(fake: &FakeRuntime, dir: &std::path::Path) -> CriSyncer {
    let runtime: Arc<dyn Runtime> = Arc::new(fake.clone());
    let images = ChildSpec::of({
        let runtime = runtime.clone();
        move || ImageManager::new(runtime.clone())
    })
    .start_unsupervised();
    CriSyncer::new(
        runtime,
        NodeConfig {
            node_name: "n".into(),
            pod_log_dir: dir.join("logs"),
            pod_dir: dir.join("pods"),
            dns: None,
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
            memory_capacity: 4 << 30,
            pod_cgroups: None,
            container_links_dir: None,
        },
        SyncerOutputs {
            images: images.recipient(),
            synced: start_collector().0,
            terminated: start_collector().0,
            events: start_collector().0,
            probes: None,
            probes_end: None,
        },
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("podvisor-syncer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn ctx() -> SyncContext {
    SyncContext {
        uid: UID.into(),
        cancel: Default::default(),
    }
}

/// A first sync of `pod` whose StartContainer answer is lost: the container exists,
/// created, never started. Returns it.
async fn left_created(fake: &FakeRuntime, s: &CriSyncer, pod: &SharedPod) -> ContainerStatus {
    fake.fail_next(
        Op::StartContainer,
        CriError::failed("StartContainer", "deadline exceeded"),
    );
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    let first = s.sync_pod(&ctx(), UpdateType::Create, pod, &status).await;
    assert!(
        first
            .as_ref()
            .is_err_and(|e| e.to_string().contains("deadline")),
        "{first:?}"
    );
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    assert_eq!(status.containers.len(), 1);
    assert_eq!(status.containers[0].state, ContainerState::Created);
    status.containers[0].clone()
}

#[actix_rt::test]
async fn a_created_but_never_started_instance_is_started_not_duplicated() {
    let dir = scratch("dup");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let pod = pod();
    let left = left_created(&fake, &s, &pod).await;

    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    s.sync_pod(&ctx(), UpdateType::Sync, &pod, &status)
        .await
        .expect("the second sync succeeds");
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    assert_eq!(
        status
            .containers
            .iter()
            .map(|c| (c.id.as_str(), c.state))
            .collect::<Vec<_>>(),
        [(left.id.as_str(), ContainerState::Running)],
        "the instance left behind is started; no second one is created"
    );
    assert_eq!(fake.calls_of(Op::CreateContainer).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn a_created_instance_of_an_old_spec_is_removed_before_the_new_one_is_made() {
    let dir = scratch("stale");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let old = pod();
    let stale = left_created(&fake, &s, &old).await.id;

    let new = old.edited(|p| {
        p.spec.as_mut().unwrap().containers[0].command = Some(vec!["sleep".into(), "7".into()]);
    });
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    s.sync_pod(&ctx(), UpdateType::Update, &new, &status)
        .await
        .expect("sync with the new spec");
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    assert_eq!(status.containers.len(), 1, "{:?}", status.containers);
    assert_ne!(status.containers[0].id, stale);
    assert_eq!(status.containers[0].state, ContainerState::Running);
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn an_orphan_is_stopped_with_its_pods_own_grace_period() {
    use podvisor_core::GracePeriod;
    use podvisor_kubelet::protocol::sync::Termination;
    use podvisor_kubelet::protocol::updates::RuntimePod;
    let dir = scratch("orphan");
    let fake = FakeRuntime::new();
    // It ignores SIGTERM: its stop takes the whole grace period it is given.
    fake.set_program(
        "app",
        podvisor_cri::fake::Program::runs_forever().ignoring_sigterm(),
    );
    let s = syncer(&fake, &dir);
    let pod = pod().edited(|p| p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(2));
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    s.sync_pod(&ctx(), UpdateType::Create, &pod, &status)
        .await
        .unwrap();
    // Nobody wants the pod after an agent restart: an orphan, known only from the runtime,
    // whose kill comes with the default 30 s for want of a spec.
    let listing = fake.list_pods().await.unwrap();
    let rp = RuntimePod::new(listing.into_iter().find(|p| p.pod.uid == UID).unwrap());
    let t0 = std::time::Instant::now();
    let termination = Termination {
        grace: GracePeriod::DEFAULT,
        running_pod: Some(&rp),
        status_fns: &[],
    };
    s.sync_terminating_pod(&ctx(), &rp.stand_in(), &Arc::default(), termination)
        .await
        .unwrap();
    let took = t0.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(2) && took < std::time::Duration::from_secs(10),
        "stopped in {took:?}: the pod's own 2 s, not 30 s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a sync allocates before it knows whether there is anything to do. Every pod is
/// synced about once a minute and most syncs find nothing to do; the future of one that
/// acts (kills, sandbox, image, starts, hooks) was all allocated up front, some 10 KiB,
/// and at 500 pods those allocations were most of the pod workers' CPU (glibc's large
/// allocations consolidate its free lists first).
#[actix_rt::test]
async fn a_sync_allocates_the_work_it_may_do_only_when_it_does_it() {
    let dir = scratch("size");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    let pod = pod();
    let ctx = ctx();
    let sync = s.sync_pod(&ctx, UpdateType::Sync, &pod, &status);
    let size = std::mem::size_of_val(&*sync);
    assert!(size <= 2048, "{size} bytes before it runs");
}

/// The terminated sync removes what the status it is given shows (as of after the
/// termination: the worker waits for status that new) without inspecting the pod again:
/// on containerd 1.6 each inspection's listing walks every pod, and removing 500 pods
/// made 500 of them.
#[actix_rt::test]
async fn the_terminated_sync_removes_what_its_status_shows_without_a_listing() {
    let dir = scratch("removal");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let pod = deleted(pod());
    let stopped = run_and_stop(&s, &fake, &pod).await;
    fake.clear_calls();
    s.sync_terminated_pod(&ctx(), &pod, &stopped).await.unwrap();
    assert!(
        fake.calls_of(Op::PodStatus).is_empty(),
        "no inspection of its own"
    );
    assert_eq!(fake.calls_of(Op::RemoveContainer).len(), 1);
    assert_eq!(fake.calls_of(Op::RemoveSandbox).len(), 1);
    let left = fake.pod_status(UID).await.unwrap();
    assert!(
        left.containers.is_empty() && left.sandboxes.is_empty(),
        "{left:?}"
    );
    assert!(
        !dir.join("pods").join(UID).exists(),
        "its directory is gone"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pod that finished and is still wanted keeps its stopped sandbox, its last container
/// and its termination messages until it is deleted (as the kubelet does: `kubectl logs`
/// reads them); its volumes go.
#[actix_rt::test]
async fn a_finished_pods_terminated_sync_keeps_its_containers_and_drops_its_volumes() {
    let dir = scratch("finished");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let pod = pod();
    let stopped = run_and_stop(&s, &fake, &pod).await;
    let state = dir.join("pods").join(UID);
    let volumes = state.join("volumes").join("empty-dir").join("scratch");
    std::fs::create_dir_all(&volumes).unwrap();
    let kept = state
        .join("containers")
        .join("app")
        .join("0-termination-log");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, "done").unwrap();
    fake.clear_calls();
    s.sync_terminated_pod(&ctx(), &pod, &stopped).await.unwrap();
    assert!(fake.calls_of(Op::RemoveContainer).is_empty());
    assert!(fake.calls_of(Op::RemoveSandbox).is_empty());
    let left = fake.pod_status(UID).await.unwrap();
    assert_eq!((left.containers.len(), left.sandboxes.len()), (1, 1));
    assert!(!state.join("volumes").exists(), "its volumes are gone");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "done");
    let _ = std::fs::remove_dir_all(&dir);
}

fn deleted(pod: SharedPod) -> SharedPod {
    let mut p = (*pod).clone();
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    SharedPod::new(p).unwrap()
}

/// Runs the pod, stops it, and returns its status after the stop.
async fn run_and_stop(s: &CriSyncer, fake: &FakeRuntime, pod: &SharedPod) -> Arc<PodStatus> {
    use podvisor_core::GracePeriod;
    use podvisor_kubelet::protocol::sync::Termination;
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    s.sync_pod(&ctx(), UpdateType::Create, pod, &status)
        .await
        .unwrap();
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    let termination = Termination {
        grace: GracePeriod::from_seconds(1),
        running_pod: None,
        status_fns: &[],
    };
    s.sync_terminating_pod(&ctx(), pod, &status, termination)
        .await
        .unwrap();
    Arc::new(fake.pod_status(UID).await.unwrap())
}

/// The outcome names the container whose start was the sync's last change, which the
/// worker's next wait takes as proof the sync's changes are seen (a sync whose start
/// failed, which may leave a created container behind, ends in an error instead).
#[actix_rt::test]
async fn the_outcome_names_the_last_start_only_when_it_was_the_last_change() {
    let dir = scratch("last");
    let fake = FakeRuntime::new();
    let s = syncer(&fake, &dir);
    let two = pod().edited(|p| {
        let spec = p.spec.as_mut().unwrap();
        let mut side = spec.containers[0].clone();
        side.name = "side".into();
        spec.containers.push(side);
    });
    let status = Arc::new(fake.pod_status(UID).await.unwrap());
    let outcome = s
        .sync_pod(&ctx(), UpdateType::Create, &two, &status)
        .await
        .unwrap();
    let status = fake.pod_status(UID).await.unwrap();
    let side = status.container("side").unwrap();
    assert!(outcome.changed);
    assert_eq!(outcome.last_started.map(|c| c.0), Some(side.id.clone()));
    // The next sync changes nothing: no start to name.
    let status = Arc::new(status);
    let next = s
        .sync_pod(&ctx(), UpdateType::Sync, &two, &status)
        .await
        .unwrap();
    assert!(!next.changed && next.last_started.is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
