//! Pod cgroups nobody knows (the kubelet's `cleanupOrphanedPodCgroups`). A pod removed
//! while its agent was down, or whose sandbox someone else removed, leaves
//! `kubepods/…/pod<uid>` behind in every hierarchy; each one costs the kernel and
//! whatever walks the tree (cAdvisor watches every cgroup). Housekeeping removes those
//! whose UID no config, pod worker or runtime pod holds. Unlike the kubelet nothing is
//! killed: a cgroup still holding a process stays (the kernel refuses), and so does one
//! made or changed within `MIN_AGE`, which may be another agent's pod between its cgroup
//! and its sandbox on a shared host.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use podvisor_core::PodUid;
use podvisor_core::qos::QosClass;

use super::pod_cgroups::{CgroupError, PodCgroups};

/// How long a pod cgroup nobody knows is left alone after it was made or last changed.
pub(crate) const MIN_AGE: Duration = Duration::from_secs(60);

const CLASSES: [QosClass; 3] = [
    QosClass::Guaranteed,
    QosClass::Burstable,
    QosClass::BestEffort,
];

/// What one sweep did.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    pub removed: Vec<PodUid>,
    pub stayed: Vec<CgroupError>,
}

impl PodCgroups {
    /// Removes the cgroups of pods whose UID is not in `keep`, older than `MIN_AGE` at
    /// `now`. Blocking: reads one hierarchy's QoS parents, removes from all of them.
    pub(crate) fn sweep_orphans(&self, keep: &HashSet<PodUid>, now: SystemTime) -> Swept {
        let mut swept = Swept::default();
        if self.systemd {
            return swept;
        }
        let Some(probe) = self.probe() else {
            return swept;
        };
        for parent in CLASSES.map(|q| self.qos_parent(q)) {
            let under = probe.join(parent.trim_start_matches('/'));
            for (uid, dir) in pods_under(&under) {
                if keep.contains(&uid) || recent(&dir, now) {
                    continue;
                }
                let errors = self.remove_named(&format!("{parent}/pod{uid}"));
                if errors.is_empty() {
                    swept.removed.push(uid);
                } else {
                    swept.stayed.extend(errors);
                }
            }
        }
        swept
    }

    /// Removes pod `uid`'s cgroup, whatever its class (an orphan's spec is not known).
    pub(crate) fn remove_uid(&self, uid: &PodUid) -> Vec<CgroupError> {
        if self.systemd {
            return Vec::new();
        }
        CLASSES
            .iter()
            .flat_map(|q| self.remove_named(&format!("{}/pod{uid}", self.qos_parent(*q))))
            .collect()
    }

    /// Where pods' cgroups are looked for: the unified tree, or (v1) the memory
    /// hierarchy, which the runtime makes every container's cgroup in.
    fn probe(&self) -> Option<PathBuf> {
        if self.fs.join("cgroup.controllers").exists() {
            return Some(self.fs.clone());
        }
        ["memory", "cpu", "pids"]
            .map(|h| self.fs.join(h))
            .into_iter()
            .find(|p| p.is_dir())
    }
}

/// The `pod<uid>` cgroups directly below `dir`.
fn pods_under(dir: &Path) -> Vec<(PodUid, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name();
            let uid = name.to_str()?.strip_prefix("pod")?;
            (!uid.is_empty()).then(|| (PodUid::from(uid), e.path()))
        })
        .collect()
}

/// Whether `dir` was made or changed within `MIN_AGE` of `now` (or cannot be told).
fn recent(dir: &Path, now: SystemTime) -> bool {
    let Ok(changed) = std::fs::metadata(dir).and_then(|m| m.modified()) else {
        return true;
    };
    now.duration_since(changed)
        .map_or(true, |age| age < MIN_AGE)
}

#[cfg(test)]
#[path = "pod_cgroups_sweep_tests.rs"]
mod tests;
