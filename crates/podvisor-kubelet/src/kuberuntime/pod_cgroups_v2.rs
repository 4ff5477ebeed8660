//! Pod cgroups on the unified hierarchy (cgroup v2), as the kubelet's cgroup manager
//! writes them through libcontainer: the controllers enabled in each parent's
//! `cgroup.subtree_control` down to the pod, then `cpu.weight` (the v1 shares converted as
//! runc converts them), `cpu.max` (`<quota> <period>`, or `max`) and `memory.max`; the
//! `besteffort` parent gets the least weight. Tested on a directory laid out as cgroup2 is:
//! this project's machines run cgroup v1.

use std::path::Path;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::qos::{QosClass, qos_class};

use super::pod_cgroups::{CgroupError, PodCgroups, PodLimits, io, limits};

/// The controllers the pod's limits need.
const CONTROLLERS: [&str; 3] = ["cpu", "memory", "pids"];
const PERIOD_US: i64 = 100_000;

/// runc's `ConvertCPUSharesToCgroupV2Value`: shares 2..262144 onto weights 1..10000.
pub(crate) fn weight(shares: i64) -> i64 {
    if shares <= 0 {
        return 0;
    }
    1 + ((shares.clamp(2, 262_144) - 2) * 9999) / 262_142
}

/// `cpu.max` for a quota.
fn cpu_max(quota_us: Option<i64>) -> String {
    match quota_us {
        Some(q) => format!("{q} {PERIOD_US}"),
        None => format!("max {PERIOD_US}"),
    }
}

fn memory_max(bytes: Option<i64>) -> String {
    bytes.map_or("max".to_string(), |b| b.to_string())
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), CgroupError> {
    let path = dir.join(file);
    std::fs::write(&path, value).map_err(io(&path))
}

/// Makes `dir` (beneath `fs`) and every cgroup above it, each parent delegating the
/// controllers it has to its children.
fn make_delegated(fs: &Path, name: &str) -> Result<(), CgroupError> {
    let mut parent = fs.to_path_buf();
    for part in name
        .trim_start_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
    {
        let has = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
        let enable: Vec<String> = CONTROLLERS
            .iter()
            .filter(|c| has.split_whitespace().any(|h| h == **c))
            .map(|c| format!("+{c}"))
            .collect();
        if !enable.is_empty() {
            write(&parent, "cgroup.subtree_control", &enable.join(" "))?;
        }
        let child = parent.join(part);
        std::fs::create_dir_all(&child).map_err(io(&child))?;
        if !child.join("cgroup.controllers").exists() && !has.is_empty() {
            // A real cgroup2 directory shows what its parent delegated; a plain one (a test's
            // tree) is told.
            let _ = std::fs::write(child.join("cgroup.controllers"), has.trim());
        }
        parent = child;
    }
    Ok(())
}

fn apply(dir: &Path, l: &PodLimits) -> Result<(), CgroupError> {
    write(dir, "cpu.weight", &weight(l.cpu_shares).to_string())?;
    write(dir, "cpu.max", &cpu_max(l.cpu_quota_us))?;
    write(dir, "memory.max", &memory_max(l.memory_bytes))
}

/// Makes the pod's cgroup with its limits, before its sandbox.
pub(super) fn ensure(cg: &PodCgroups, pod: &Pod) -> Result<(), CgroupError> {
    let name = cg.name(pod);
    make_delegated(&cg.fs, &name)?;
    if qos_class(pod) == QosClass::BestEffort {
        let parent = cg
            .fs
            .join(cg.qos_parent(QosClass::BestEffort).trim_start_matches('/'));
        write(&parent, "cpu.weight", "1")?;
    }
    apply(&cg.fs.join(name.trim_start_matches('/')), &limits(pod))
}

/// Raises the pod's limits to the larger of what they are and what the pod now asks.
pub(super) fn widen(cg: &PodCgroups, pod: &Pod) -> Result<(), CgroupError> {
    let dir = cg.fs.join(cg.name(pod).trim_start_matches('/'));
    if !dir.is_dir() {
        return Ok(());
    }
    let l = limits(pod);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let quota_now = read("cpu.max")
        .split_whitespace()
        .next()
        .and_then(|q| q.parse::<i64>().ok());
    let quota = match (quota_now, l.cpu_quota_us) {
        (Some(now), Some(want)) => Some(now.max(want)),
        _ => None,
    };
    write(&dir, "cpu.max", &cpu_max(quota))?;
    let memory_now = read("memory.max").trim().parse::<i64>().ok();
    let memory = match (memory_now, l.memory_bytes) {
        (Some(now), Some(want)) => Some(now.max(want)),
        _ => None,
    };
    write(&dir, "memory.max", &memory_max(memory))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(uid: &str, resources: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"uid": uid}, "spec": {"containers": [
            {"name": "c", "image": "i", "resources": resources}
        ]}}))
        .unwrap()
    }

    #[test]
    fn shares_become_weights_as_runc_converts_them() {
        assert_eq!(weight(2), 1);
        assert_eq!(weight(1024), 39);
        assert_eq!(weight(262_144), 10_000);
        assert_eq!(weight(512), 20);
    }

    #[test]
    fn on_a_cgroup2_tree_the_pod_gets_delegated_controllers_and_its_limits() {
        let fs = std::env::temp_dir().join(format!("podvisor-cgroup2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&fs);
        std::fs::create_dir_all(&fs).unwrap();
        std::fs::write(fs.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        let cg = PodCgroups {
            fs: fs.clone(),
            root: "/".into(),
            systemd: false,
        };
        let guaranteed = pod("g", json!({"limits": {"cpu": "250m", "memory": "64Mi"}}));
        cg.ensure(&guaranteed).unwrap();
        let read = |f: &str| std::fs::read_to_string(fs.join(f)).unwrap();
        assert_eq!(read("cgroup.subtree_control"), "+cpu +memory +pids");
        assert_eq!(
            read("kubepods/cgroup.subtree_control"),
            "+cpu +memory +pids"
        );
        assert_eq!(read("kubepods/podg/cpu.weight"), "10");
        assert_eq!(read("kubepods/podg/cpu.max"), "25000 100000");
        assert_eq!(read("kubepods/podg/memory.max"), (64 << 20).to_string());
        let best = pod("e", json!({}));
        cg.ensure(&best).unwrap();
        assert_eq!(read("kubepods/besteffort/cpu.weight"), "1");
        assert_eq!(read("kubepods/besteffort/pode/cpu.max"), "max 100000");
        assert_eq!(read("kubepods/besteffort/pode/memory.max"), "max");
        // A resize widens the pod first: a larger limit, never a smaller one.
        let bigger = pod("g", json!({"limits": {"cpu": "500m", "memory": "32Mi"}}));
        cg.widen(&bigger).unwrap();
        assert_eq!(read("kubepods/podg/cpu.max"), "50000 100000");
        assert_eq!(read("kubepods/podg/memory.max"), (64 << 20).to_string());
        std::fs::remove_dir_all(&fs).unwrap();
    }
}
