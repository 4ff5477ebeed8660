//! The CRI syncer's duplicate protection against containerd: a container created but
//! never started (what a lost StartContainer answer, or an agent killed between create and
//! start, leaves behind) is started by the next sync, never doubled.

mod common;

use std::sync::Arc;

use futures_util::FutureExt;
use podvisor_actors::ChildSpec;
use podvisor_actors::testing::start_collector;
use podvisor_core::SharedPod;
use podvisor_cri::{ContainerState, Runtime};
use podvisor_kubelet::kuberuntime::config::{
    Instance, NodeConfig, container_config, pod_log_directory, sandbox_config,
};
use podvisor_kubelet::kuberuntime::images::ImageManager;
use podvisor_kubelet::kuberuntime::syncer::{CriSyncer, SyncerOutputs};
use podvisor_kubelet::protocol::sync::{PodSyncer, SyncContext};
use podvisor_kubelet::protocol::updates::UpdateType;

#[test]
fn a_container_created_but_never_started_is_started_not_doubled() {
    actix::System::new().block_on(async {
        let rt = common::runtime().await;
        let uid = common::unique_uid("dup");
        let dir = common::log_dir(&uid);
        let result = std::panic::AssertUnwindSafe(async {
            let node = NodeConfig {
                node_name: "dup-test".into(),
                pod_log_dir: dir.join("logs"),
                pod_dir: dir.join("pods"),
                dns: None,
                cluster_dns: Vec::new(),
                cluster_domain: "cluster.local".into(),
                memory_capacity: 4 << 30,
                pod_cgroups: None,
                container_links_dir: None,
            };
            let pod: SharedPod = SharedPod::new(
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "dup-test", "namespace": "default", "uid": uid},
                    "spec": {
                        "hostNetwork": true,
                        "containers": [{
                            "name": "app",
                            "image": podvisor_cri::sample::TEST_IMAGE,
                            "command": ["sleep", "3600"],
                        }],
                    },
                }))
                .unwrap(),
            )
            .unwrap();

            // Exactly what the syncer's first sync creates, left unstarted.
            std::fs::create_dir_all(pod_log_directory(&node, &pod)).unwrap();
            let sandbox = sandbox_config(&node, &pod, 0);
            let sandbox_id = rt.run_sandbox(&sandbox).await.unwrap();
            let image = rt
                .image_status(podvisor_cri::sample::TEST_IMAGE)
                .await
                .unwrap()
                .expect("the test image is imported")
                .id;
            let spec = &pod.spec.as_ref().unwrap().containers[0];
            let instance = Instance {
                pod: &pod,
                container: spec,
                image: &image,
                attempt: 0,
                backoff_base: 0,
                env: &Default::default(),
                etc_hosts: None,
                termination_log: None,
            };
            let cfg = container_config(&node, &instance).unwrap();
            let left = rt
                .create_container(&sandbox_id, &cfg, &sandbox)
                .await
                .unwrap();

            let runtime: Arc<dyn Runtime> = Arc::new(rt.clone());
            let images = ChildSpec::of({
                let runtime = runtime.clone();
                move || ImageManager::new(runtime.clone())
            })
            .start_unsupervised();
            let syncer = CriSyncer::new(
                runtime,
                node,
                SyncerOutputs {
                    images: images.recipient(),
                    synced: start_collector().0,
                    terminated: start_collector().0,
                    events: start_collector().0,
                    probes: None,
                    probes_end: None,
                },
            );
            let status = Arc::new(rt.pod_status(&uid).await.unwrap());
            assert_eq!(
                status
                    .containers
                    .iter()
                    .map(|c| (c.id.as_str(), c.state))
                    .collect::<Vec<_>>(),
                [(left.as_str(), ContainerState::Created)]
            );
            let ctx = SyncContext {
                uid: uid.as_str().into(),
                cancel: Default::default(),
            };
            syncer
                .sync_pod(&ctx, UpdateType::Sync, &pod, &status)
                .await
                .expect("the sync succeeds");
            let status = rt.pod_status(&uid).await.unwrap();
            assert_eq!(
                status
                    .containers
                    .iter()
                    .map(|c| (c.id.as_str(), c.state))
                    .collect::<Vec<_>>(),
                [(left.as_str(), ContainerState::Running)],
                "the instance left behind runs; no second one was created"
            );
            assert_eq!(status.sandboxes.len(), 1, "the sandbox was adopted");
        })
        .catch_unwind()
        .await;
        common::remove_pod(&rt, &uid).await;
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(p) = result {
            std::panic::resume_unwind(p);
        }
    });
}
