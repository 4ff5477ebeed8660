use serde_json::json;

use super::*;

fn pod(uid: &str, containers: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"uid": uid}, "spec": {"containers": containers}}))
        .unwrap()
}

fn c(resources: serde_json::Value) -> serde_json::Value {
    json!({"name": "c", "image": "i", "resources": resources})
}

#[test]
fn each_class_has_its_parent_and_the_kubelet_s_limits() {
    let cg = PodCgroups::new("/", false);
    let guaranteed = pod(
        "g",
        json!([c(json!({"limits": {"cpu": "500m", "memory": "64Mi"}}))]),
    );
    let burstable = pod(
        "b",
        json!([
            c(json!({"requests": {"cpu": "250m"}})),
            c(json!({"limits": {"memory": "32Mi"}}))
        ]),
    );
    let best = pod("e", json!([c(json!({}))]));
    assert_eq!(cg.name(&guaranteed), "/kubepods/podg");
    assert_eq!(cg.name(&burstable), "/kubepods/burstable/podb");
    assert_eq!(cg.name(&best), "/kubepods/besteffort/pode");
    assert_eq!(
        PodCgroups::new("/custom/", false).name(&best),
        "/custom/kubepods/besteffort/pode"
    );
    let systemd = PodCgroups::new("/", true);
    let dashed = pod("a-b", json!([c(json!({}))]));
    assert_eq!(systemd.name(&dashed), "kubepods-besteffort-poda_b.slice");
    assert_eq!(systemd.name(&guaranteed), "kubepods-podg.slice");
    assert_eq!(
        limits(&guaranteed),
        PodLimits {
            cpu_shares: 512,
            cpu_quota_us: Some(50_000),
            memory_bytes: Some(64 << 20)
        }
    );
    // One container without a memory limit: the pod has none; its CPU has no limit at all.
    assert_eq!(
        limits(&burstable),
        PodLimits {
            cpu_shares: 256,
            cpu_quota_us: None,
            memory_bytes: None
        }
    );
    assert_eq!(limits(&best).cpu_shares, 2);
    let tiny = pod(
        "t",
        json!([c(json!({"limits": {"cpu": "1m", "memory": "8Mi"}}))]),
    );
    assert_eq!(
        (limits(&tiny).cpu_shares, limits(&tiny).cpu_quota_us),
        (2, Some(1000))
    );
}

#[test]
fn a_pod_s_cgroup_is_made_with_its_limits_and_removed_from_every_hierarchy() {
    let fs = std::env::temp_dir().join(format!("podvisor-cgroups-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fs);
    for h in ["cpu", "memory", "pids"] {
        std::fs::create_dir_all(fs.join(h)).unwrap();
    }
    let cg = PodCgroups {
        fs: fs.clone(),
        root: "/".into(),
        systemd: false,
    };
    let p = pod(
        "u1",
        json!([c(json!({"limits": {"cpu": "2", "memory": "1Gi"}}))]),
    );
    cg.ensure(&p).unwrap();
    let read = |f: &str| std::fs::read_to_string(fs.join(f)).unwrap();
    assert_eq!(read("cpu/kubepods/podu1/cpu.shares"), "2048");
    assert_eq!(read("cpu/kubepods/podu1/cpu.cfs_quota_us"), "200000");
    assert_eq!(
        read("memory/kubepods/podu1/memory.limit_in_bytes"),
        (1i64 << 30).to_string()
    );
    // The runtime makes the pod's directory in the other hierarchies.
    std::fs::create_dir_all(fs.join("pids/kubepods/podu1")).unwrap();
    // Plain directories stand for cgroups: their files must go first.
    for f in [
        "cpu/kubepods/podu1/cpu.shares",
        "cpu/kubepods/podu1/cpu.cfs_quota_us",
        "memory/kubepods/podu1/memory.limit_in_bytes",
    ] {
        std::fs::remove_file(fs.join(f)).unwrap();
    }
    assert!(cg.remove(&p).is_empty());
    for h in ["cpu", "memory", "pids"] {
        assert!(!fs.join(h).join("kubepods/podu1").exists(), "{h}");
    }
}
