//! The pods' local storage as the Summary API reports it: each pod's volumes
//! (`<pod dir>/<uid>/volumes/<kind>/<name>`) and each container's logs
//! (`<pod log dir>/<ns>_<name>_<uid>/<container>`); and the node's process ids. Walking
//! volumes costs, so it is done off the actors' threads and at most once a minute, as the
//! kubelet's `volumeStatsAggPeriod`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_core::stats::{FsStats, RlimitStats, VolumeStats};
use podvisor_cri::PodRef;

use super::disk::{filesystem, same_device, used_on};

/// Where the node keeps pods' files.
#[derive(Debug, Clone)]
pub struct Paths {
    pub pods: PathBuf,
    pub logs: PathBuf,
}

/// One pod's files.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodDisk {
    pub volumes: Vec<VolumeStats>,
    /// Of its volumes, what is on the node's filesystem (not a tmpfs): its part of the
    /// pod's ephemeral storage.
    pub local_volumes: Vec<FsStats>,
    /// Each container's logs, by container name.
    pub logs: HashMap<String, FsStats>,
}

/// One walk of the pods' local storage.
#[derive(Debug, Clone)]
pub(crate) struct DiskSample {
    pub pods: HashMap<String, PodDisk>,
}

/// Measures the files of `pods`.
pub(crate) fn read(paths: &Paths, pods: &[PodRef], at: &Time) -> DiskSample {
    let nodefs = filesystem(&paths.pods, at);
    let pods = pods
        .iter()
        .map(|p| (p.uid.clone(), pod(paths, p, nodefs.as_ref(), at)))
        .collect();
    DiskSample { pods }
}

fn pod(paths: &Paths, p: &PodRef, nodefs: Option<&FsStats>, at: &Time) -> PodDisk {
    let mut out = PodDisk::default();
    let volumes = paths.pods.join(&p.uid).join("volumes");
    for dir in children(&volumes).iter().flat_map(|kind| children(kind)) {
        let name = file_name(&dir);
        let fs = used_on(filesystem(&dir, at).as_ref(), &dir, at);
        if same_device(&dir, &paths.pods) {
            out.local_volumes.push(fs.clone());
        }
        out.volumes.push(VolumeStats { name, fs });
    }
    out.volumes.sort_by(|a, b| a.name.cmp(&b.name));
    let logs = paths
        .logs
        .join(format!("{}_{}_{}", p.namespace, p.name, p.uid));
    for dir in children(&logs) {
        out.logs.insert(file_name(&dir), used_on(nodefs, &dir, at));
    }
    out
}

fn children(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The kernel's bound on process ids and how many tasks run (`/proc/loadavg`'s
/// `running/total`, what `sysinfo`'s process count is).
pub(crate) fn rlimit(at: &Time) -> Option<RlimitStats> {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max").ok()?;
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(RlimitStats {
        time: at.clone(),
        maxpid: max.trim().parse().ok(),
        curproc: tasks(&loadavg),
    })
}

fn tasks(loadavg: &str) -> Option<i64> {
    let field = loadavg.split_whitespace().nth(3)?;
    field.split_once('/')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_volumes_and_logs_are_measured_where_the_kubelet_keeps_them() {
        let base = std::env::temp_dir().join(format!("podvisor-local-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let paths = Paths {
            pods: base.join("pods"),
            logs: base.join("logs"),
        };
        let p = PodRef {
            uid: "u1".into(),
            name: "web".into(),
            namespace: "default".into(),
        };
        let data = paths.pods.join("u1/volumes/empty-dir/data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("f"), vec![7u8; 256 << 10]).unwrap();
        std::fs::create_dir_all(paths.pods.join("u1/volumes/kubernetes.io~secret/token")).unwrap();
        let log = paths.logs.join("default_web_u1/app");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join("0.log"), vec![b'x'; 64 << 10]).unwrap();

        let at = podvisor_core::time::now();
        let s = read(&paths, std::slice::from_ref(&p), &at);
        let d = &s.pods["u1"];
        let names: Vec<_> = d.volumes.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["data", "token"]);
        assert!(d.volumes[0].fs.used_bytes >= Some(256 << 10), "{d:?}");
        assert_eq!(d.volumes[0].fs.inodes_used, Some(2));
        assert_eq!(d.local_volumes.len(), 2, "both on the test's filesystem");
        assert!(d.logs["app"].used_bytes >= Some(64 << 10), "{d:?}");
        assert_eq!(tasks("0.10 0.20 0.30 2/345 6789"), Some(345));
        assert!(rlimit(&at).is_some_and(|r| r.maxpid > Some(0)));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
