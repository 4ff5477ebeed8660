//! Pod cgroups under a parent per QoS class, as the kubelet's container manager makes them
//! (`cgroupsPerQOS`, the cgroupfs driver): `<root>/kubepods/pod<uid>` for Guaranteed pods,
//! `<root>/kubepods/burstable/pod<uid>` and `<root>/kubepods/besteffort/pod<uid>` for the
//! others. The sandbox's `cgroup_parent` names it, so the runtime puts the pod's containers
//! beneath; the pod's cgroup gets the pod's limits first (cgroup v1: `cpu.shares` from the
//! requests, `cpu.cfs_quota_us` and `memory.limit_in_bytes` from the limits when every
//! container has one; `besteffort` gets the least CPU weight, 2 shares). When the pod is
//! gone, its cgroup goes from every hierarchy.
//!
//! On cgroup v2 (`cgroup.controllers` at the top of the cgroup filesystem) the same tree is
//! made on the unified hierarchy, with the v2 files (`pod_cgroups_v2.rs`).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::fit::Requests;
use podvisor_core::qos::{QosClass, pod_limit, qos_class};

/// CPU shares for a request of 0 (the kernel's least useful weight), as the kubelet.
const MIN_SHARES: i64 = 2;
const SHARES_PER_CPU: i64 = 1024;
/// The CFS period the kubelet uses, and the least quota it sets.
const PERIOD_US: i64 = 100_000;
const MIN_QUOTA_US: i64 = 1_000;
/// The v1 hierarchies the limits are written in (the runtime makes the others).
const LIMITED: [&str; 2] = ["cpu", "memory"];

#[derive(Debug, thiserror::Error)]
#[error("pod cgroup {path}: {source}")]
pub struct CgroupError {
    path: PathBuf,
    source: std::io::Error,
}

/// Where pods' cgroups go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCgroups {
    /// The cgroup filesystem (`/sys/fs/cgroup`).
    pub fs: PathBuf,
    /// The node's cgroup root (the kubelet's `--cgroup-root`, `/` by default).
    pub root: String,
    /// The runtime's cgroup driver is systemd's (`SystemdCgroup = true`): the parent is a
    /// slice (`kubepods-burstable-pod<uid>.slice`), systemd makes it, and podvisor writes
    /// no limits of its own on it.
    pub systemd: bool,
}

/// What one pod's cgroup is given (v1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodLimits {
    pub cpu_shares: i64,
    /// `None`: no CPU limit.
    pub cpu_quota_us: Option<i64>,
    /// `None`: no memory limit.
    pub memory_bytes: Option<i64>,
}

fn shares(milli: i64) -> i64 {
    (milli.saturating_mul(SHARES_PER_CPU) / 1000).max(MIN_SHARES)
}

fn quota(milli: i64) -> i64 {
    (milli.saturating_mul(PERIOD_US) / 1000).max(MIN_QUOTA_US)
}

/// The kubelet's `ResourceConfigForPod`, for v1.
pub fn limits(pod: &Pod) -> PodLimits {
    if qos_class(pod) == QosClass::BestEffort {
        return PodLimits {
            cpu_shares: MIN_SHARES,
            cpu_quota_us: None,
            memory_bytes: None,
        };
    }
    PodLimits {
        cpu_shares: shares(Requests::of(pod).cpu_milli),
        cpu_quota_us: pod_limit(pod, "cpu").map(quota),
        memory_bytes: pod_limit(pod, "memory"),
    }
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError + '_ {
    move |source| CgroupError {
        path: path.to_path_buf(),
        source,
    }
}

fn write(dir: &Path, file: &str, value: i64) -> Result<(), CgroupError> {
    let path = dir.join(file);
    std::fs::write(&path, value.to_string()).map_err(io(&path))
}

fn read(dir: &Path, file: &str) -> Result<i64, CgroupError> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    text.trim()
        .parse()
        .map_err(|e| io(&path)(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

impl PodCgroups {
    pub fn new(root: &str, systemd: bool) -> Self {
        Self {
            fs: PathBuf::from("/sys/fs/cgroup"),
            root: root.to_string(),
            systemd,
        }
    }

    pub(crate) fn qos_parent(&self, qos: QosClass) -> String {
        let base = format!("{}/kubepods", self.root.trim_end_matches('/'));
        match qos {
            QosClass::Guaranteed => base,
            QosClass::Burstable => format!("{base}/burstable"),
            QosClass::BestEffort => format!("{base}/besteffort"),
        }
    }

    /// The pod's cgroup, as the sandbox's `cgroup_parent` names it.
    pub fn name(&self, pod: &Pod) -> String {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        if self.systemd {
            let class = match qos_class(pod) {
                QosClass::Guaranteed => "",
                QosClass::Burstable => "-burstable",
                QosClass::BestEffort => "-besteffort",
            };
            return format!("kubepods{class}-pod{}.slice", uid.replace('-', "_"));
        }
        format!("{}/pod{uid}", self.qos_parent(qos_class(pod)))
    }

    fn unified(&self) -> bool {
        self.fs.join("cgroup.controllers").exists()
    }

    /// Makes the pod's cgroup with its limits, before its sandbox.
    pub fn ensure(&self, pod: &Pod) -> Result<(), CgroupError> {
        if self.systemd {
            return Ok(());
        }
        if self.unified() {
            return super::pod_cgroups_v2::ensure(self, pod);
        }
        let name = self.name(pod);
        let l = limits(pod);
        for controller in LIMITED {
            let hierarchy = self.fs.join(controller);
            if !hierarchy.is_dir() {
                continue;
            }
            let qos = hierarchy.join(self.qos_parent(qos_class(pod)).trim_start_matches('/'));
            let dir = hierarchy.join(name.trim_start_matches('/'));
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            match controller {
                "cpu" => {
                    if qos_class(pod) == QosClass::BestEffort {
                        write(&qos, "cpu.shares", MIN_SHARES)?;
                    }
                    write(&dir, "cpu.shares", l.cpu_shares)?;
                    write(&dir, "cpu.cfs_quota_us", l.cpu_quota_us.unwrap_or(-1))?;
                }
                _ => {
                    if let Some(bytes) = l.memory_bytes {
                        write(&dir, "memory.limit_in_bytes", bytes)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Raises the pod's cgroup limits (v1) to the larger of what they are and what the pod
    /// now asks, before its containers are resized: a child's CPU quota above its
    /// parent's is refused, so a container's may grow only under a pod's that already did.
    pub fn widen(&self, pod: &Pod) -> Result<(), CgroupError> {
        if self.systemd {
            return Ok(());
        }
        if self.unified() {
            return super::pod_cgroups_v2::widen(self, pod);
        }
        let name = self.name(pod);
        let l = limits(pod);
        let cpu = self.fs.join("cpu").join(name.trim_start_matches('/'));
        if cpu.is_dir() {
            let now = read(&cpu, "cpu.cfs_quota_us")?;
            let want = l.cpu_quota_us.unwrap_or(-1);
            let wider = if now < 0 || want < 0 {
                -1
            } else {
                now.max(want)
            };
            write(&cpu, "cpu.cfs_quota_us", wider)?;
        }
        let memory = self.fs.join("memory").join(name.trim_start_matches('/'));
        if memory.is_dir() {
            let now = read(&memory, "memory.limit_in_bytes")?;
            let want = l.memory_bytes.unwrap_or(i64::MAX);
            if want > now {
                // No limit is the kernel's largest page-aligned value: -1 writes it.
                let v = if l.memory_bytes.is_none() { -1 } else { want };
                write(&memory, "memory.limit_in_bytes", v)?;
            }
        }
        Ok(())
    }

    /// Removes the pod's cgroup from every hierarchy (once its containers are gone). A
    /// cgroup that still holds something stays, and says so.
    pub fn remove(&self, pod: &Pod) -> Vec<CgroupError> {
        if self.systemd {
            return Vec::new();
        }
        self.remove_named(&self.name(pod))
    }

    /// Removes cgroup `name` (below the node's root) from every hierarchy, with what a
    /// runtime left empty beneath it.
    pub(crate) fn remove_named(&self, name: &str) -> Vec<CgroupError> {
        let Ok(entries) = std::fs::read_dir(&self.fs) else {
            return Vec::new();
        };
        let mut errors = Vec::new();
        // v1: one directory per hierarchy; v2: the one tree.
        let roots = entries.flatten().map(|e| e.path()).chain([self.fs.clone()]);
        for root in roots.filter(|r| r.is_dir()) {
            let dir = root.join(name.trim_start_matches('/'));
            match remove_tree(&dir) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => errors.push(io(&dir)(err)),
            }
        }
        errors
    }
}

/// Removes a cgroup and the cgroups below it, deepest first: a runtime may leave its
/// containers' empty cgroups under the pod's. The kernel refuses any that holds a process.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
#[path = "pod_cgroups_tests.rs"]
mod tests;
