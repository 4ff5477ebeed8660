//! The order pods are evicted in, as the kubelet ranks them: for memory, pods using more
//! than they request first, then lower priority, then the most used above the request;
//! for disk (bytes or inodes), the same over the pod's ephemeral storage; for process ids,
//! lower priority, then the most processes. A pod with no stats goes first (the kubelet's
//! rule: nothing shows it is harmless).

use std::cmp::Reverse;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::PodExt;
use podvisor_core::fit::pod_request;
use podvisor_core::stats::{FsStats, PodStats};

use crate::signal::{Resource, Signal};

/// A pod that may be evicted, with its stats when the summary has them.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub pod: &'a Pod,
    pub stats: Option<&'a PodStats>,
}

/// Which of the pod's usage counts for a disk signal: with a dedicated image filesystem,
/// the node's holds logs and volumes and the images' the writable layers; with one
/// filesystem, all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskParts {
    pub rootfs: bool,
    pub logs_and_volumes: bool,
}

impl DiskParts {
    pub fn for_signal(signal: Signal, dedicated_image_fs: bool) -> DiskParts {
        DiskParts {
            rootfs: !dedicated_image_fs || signal.on_image_fs(),
            logs_and_volumes: !dedicated_image_fs || !signal.on_image_fs(),
        }
    }
}

/// Orders `pods` for eviction for `signal`, first to go first.
pub fn rank(pods: &mut [Candidate<'_>], signal: Signal, parts: DiskParts) {
    let resource = signal.resource();
    pods.sort_by_cached_key(|c| {
        let request = match resource {
            Resource::Memory => pod_request(c.pod, "memory"),
            Resource::EphemeralStorage => pod_request(c.pod, "ephemeral-storage"),
            Resource::Inodes | Resource::Pids => 0,
        };
        let usage = c.stats.map(|s| usage(c.pod, s, resource, parts));
        let exceeds = usage.is_some_and(|u| u > request);
        let above = usage.unwrap_or(0).saturating_sub(request);
        match resource {
            Resource::Pids => (
                usage.is_some(),
                false,
                priority(c.pod),
                Reverse(usage.unwrap_or(0)),
            ),
            _ => (usage.is_some(), !exceeds, priority(c.pod), Reverse(above)),
        }
    });
}

/// The pod's priority (0 unless set).
pub fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// What the pod uses of `resource`: working set bytes, ephemeral bytes or inodes, or
/// processes.
pub fn usage(pod: &Pod, s: &PodStats, resource: Resource, parts: DiskParts) -> i64 {
    let n = |v: Option<u64>| i64::try_from(v.unwrap_or(0)).unwrap_or(i64::MAX);
    match resource {
        Resource::Memory => n(s.memory.as_ref().and_then(|m| m.working_set_bytes)),
        Resource::Pids => n(s.process_stats.as_ref().and_then(|p| p.process_count)),
        Resource::EphemeralStorage => disk(pod, s, parts, |f| n(f.used_bytes)),
        Resource::Inodes => disk(pod, s, parts, |f| n(f.inodes_used)),
    }
}

fn disk(pod: &Pod, s: &PodStats, parts: DiskParts, of: impl Fn(&FsStats) -> i64) -> i64 {
    let mut total: i64 = 0;
    for c in &s.containers {
        if parts.rootfs {
            total = total.saturating_add(c.rootfs.as_ref().map_or(0, &of));
        }
        if parts.logs_and_volumes {
            total = total.saturating_add(c.logs.as_ref().map_or(0, &of));
        }
    }
    if parts.logs_and_volumes {
        let local = local_volumes(pod);
        for v in s
            .volumes
            .iter()
            .filter(|v| local.contains(&v.name.as_str()))
        {
            total = total.saturating_add(of(&v.fs));
        }
    }
    total
}

/// The pod's volumes on the node's disk (the kubelet's `localVolumeNames`): emptyDirs not
/// in memory, configMaps, downward API, gitRepo.
fn local_volumes(pod: &Pod) -> Vec<&str> {
    pod.volumes()
        .iter()
        .filter(|v| {
            let disk_empty_dir = v
                .empty_dir
                .as_ref()
                .is_some_and(|e| e.medium.as_deref() != Some("Memory"));
            disk_empty_dir
                || v.config_map.is_some()
                || v.downward_api.is_some()
                || v.git_repo.is_some()
        })
        .map(|v| v.name.as_str())
        .collect()
}

#[cfg(test)]
#[path = "rank_tests.rs"]
mod tests;
