use super::*;
use podvisor_cri::sample::{SAMPLE_OWNER, container_config, sandbox_config};
use podvisor_cri::{FakeRuntime, Runtime};

#[test]
fn a_rate_needs_two_samples_and_time_between_them() {
    let s = |at_ns, core_ns| Some(CpuSample { at_ns, core_ns });
    assert_eq!(rate(None, s(10, 5)), None);
    assert_eq!(
        rate(s(1_000_000_000, 0), s(3_000_000_000, 500_000_000)),
        Some(250_000_000)
    );
    assert_eq!(rate(s(5, 10), s(5, 20)), None, "no time passed");
    assert_eq!(
        rate(s(1, 20), s(5, 10)),
        None,
        "the counter went back: a new container"
    );
}

/// A fake runtime's pod, sampled: its network, processes, writable layers and the images'
/// filesystem reach the summary, and its ephemeral storage adds them up.
#[tokio::test]
async fn a_pods_network_and_storage_reach_the_summary() {
    let runtime = FakeRuntime::new();
    let uid = "u1".to_string();
    let sb_cfg = sandbox_config(&uid, "web", false, "/logs");
    let sb = runtime.run_sandbox(&sb_cfg).await.unwrap();
    let cfg = container_config(&sb_cfg, "app", &["sleep"]);
    let id = runtime.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
    runtime.start_container(&id).await.unwrap();
    let others = runtime.sandbox_usage("another-node").await.unwrap();
    assert!(
        others.is_empty(),
        "only the node's own sandboxes are measured"
    );
    let sample = Sample {
        usage: runtime.container_usage().await.unwrap(),
        sandboxes: runtime.sandbox_usage(SAMPLE_OWNER).await.unwrap(),
        image_fs: runtime.image_fs().await.unwrap().pop().map(|f| {
            (
                f,
                Some(FsStats {
                    capacity_bytes: Some(1 << 30),
                    ..FsStats::default()
                }),
            )
        }),
        pods: runtime.list_pods().await.unwrap(),
        host: super::super::node::read(1, std::path::Path::new("/")),
        disk: Some(DiskSample {
            pods: HashMap::from([(
                uid.clone(),
                super::super::local::PodDisk {
                    volumes: vec![],
                    local_volumes: vec![FsStats {
                        used_bytes: Some(1000),
                        ..FsStats::default()
                    }],
                    logs: HashMap::from([(
                        "app".to_string(),
                        FsStats {
                            used_bytes: Some(100),
                            ..FsStats::default()
                        },
                    )]),
                },
            )]),
        }),
    };
    let mut book = Book::default();
    book.record(sample);
    let s = book.summary("n1");
    let image_fs = s.node.runtime.unwrap().image_fs.unwrap();
    assert_eq!(image_fs.capacity_bytes, Some(1 << 30));
    let pod = s.pods.iter().find(|p| p.pod_ref.uid == uid).unwrap();
    assert_eq!(pod.network.as_ref().unwrap().default.name, "eth0");
    assert_eq!(pod.process_stats.as_ref().unwrap().process_count, Some(1));
    let app = &pod.containers[0];
    assert_eq!(app.rootfs.as_ref().unwrap().used_bytes, Some(4096));
    assert_eq!(app.rootfs.as_ref().unwrap().capacity_bytes, Some(1 << 30));
    assert_eq!(app.runtime_id, id);
    let eph = pod.ephemeral_storage.as_ref().unwrap();
    assert_eq!(eph.used_bytes, Some(4096 + 100 + 1000));
}
