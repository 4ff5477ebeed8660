use podvisor_core::stats::{MemoryStats, PodReference, ProcessStats};

use super::*;

fn pod(name: &str, request: Option<&str>, priority: Option<i32>) -> Pod {
    let resources =
        request.map(|r| serde_json::json!({"requests": {"memory": r, "ephemeral-storage": r}}));
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "uid": name},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": resources.unwrap_or_default()}],
            "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "ram", "emptyDir": {"medium": "Memory"}}]
        }
    }))
    .unwrap()
}

fn stats(name: &str, memory: u64, processes: u64, volume: u64) -> PodStats {
    let at = podvisor_core::time::now();
    let fs = |b| FsStats {
        used_bytes: Some(b),
        ..FsStats::default()
    };
    PodStats {
        pod_ref: PodReference {
            name: name.into(),
            namespace: "default".into(),
            uid: name.into(),
        },
        start_time: None,
        containers: vec![],
        cpu: None,
        memory: Some(MemoryStats {
            time: at,
            available_bytes: None,
            usage_bytes: None,
            working_set_bytes: Some(memory),
            rss_bytes: None,
        }),
        network: None,
        volumes: vec![
            podvisor_core::stats::VolumeStats {
                name: "scratch".into(),
                fs: fs(volume),
            },
            podvisor_core::stats::VolumeStats {
                name: "ram".into(),
                fs: fs(1 << 40),
            },
        ],
        ephemeral_storage: None,
        process_stats: Some(ProcessStats {
            process_count: Some(processes),
        }),
    }
}

fn order(pods: &[(Pod, Option<PodStats>)], signal: Signal) -> Vec<String> {
    let mut c: Vec<Candidate<'_>> = pods
        .iter()
        .map(|(p, s)| Candidate {
            pod: p,
            stats: s.as_ref(),
        })
        .collect();
    rank(&mut c, signal, DiskParts::for_signal(signal, true));
    c.iter()
        .map(|c| c.pod.metadata.name.clone().unwrap())
        .collect()
}

#[test]
fn memory_ranks_pods_over_their_requests_then_priority_then_usage_above_request() {
    let pods = [
        (
            pod("guaranteed", Some("1Gi"), None),
            Some(stats("guaranteed", 900 << 20, 1, 0)),
        ),
        (
            pod("besteffort-small", None, None),
            Some(stats("besteffort-small", 10 << 20, 1, 0)),
        ),
        (
            pod("besteffort-big", None, None),
            Some(stats("besteffort-big", 500 << 20, 1, 0)),
        ),
        (
            pod("important", None, Some(1000)),
            Some(stats("important", 800 << 20, 1, 0)),
        ),
        (pod("unmeasured", Some("1Gi"), None), None),
    ];
    assert_eq!(
        order(&pods, Signal::MemoryAvailable),
        [
            "unmeasured",
            "besteffort-big",
            "besteffort-small",
            "important",
            "guaranteed"
        ]
    );
}

#[test]
fn disk_counts_local_volumes_not_memory_ones_and_pids_count_processes() {
    let pods = [
        (
            pod("quiet", None, None),
            Some(stats("quiet", 0, 1, 1 << 10)),
        ),
        (
            pod("writer", None, None),
            Some(stats("writer", 0, 1, 64 << 20)),
        ),
        (pod("forker", None, None), Some(stats("forker", 0, 900, 0))),
    ];
    assert_eq!(
        order(&pods, Signal::NodeFsAvailable),
        ["writer", "quiet", "forker"]
    );
    assert_eq!(
        order(&pods, Signal::PidAvailable),
        ["forker", "quiet", "writer"]
    );
    let writer = &pods[1];
    let parts = DiskParts::for_signal(Signal::ImageFsAvailable, true);
    assert_eq!(
        usage(
            &writer.0,
            writer.1.as_ref().unwrap(),
            Resource::EphemeralStorage,
            parts
        ),
        0,
        "volumes are on nodefs"
    );
}
