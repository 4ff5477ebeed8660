//! The node's own use: CPU time spent outside idle (`/proc/stat`, in the kernel's fixed
//! 100 ticks a second), memory as cAdvisor measures the root cgroup (its usage less the
//! inactive file cache is the working set; what is available is the machine's memory less
//! that; without a cgroup v1 memory controller, `MemTotal - MemAvailable` of
//! `/proc/meminfo`), when the node booted, the node's filesystem and its process ids.
//! Cheap enough to read at every eviction pass.

use std::path::Path;

use podvisor_core::stats::{FsStats, RlimitStats};
use podvisor_cri::{CpuSample, MemorySample};

/// The root memory cgroup of a cgroup v1 host.
const ROOT_MEMORY: &str = "/sys/fs/cgroup/memory";

/// /proc/stat counts in USER_HZ, which Linux fixes at 100 for user space.
const NANOS_PER_TICK: u64 = 10_000_000;

pub(crate) struct NodeSample {
    pub cpu: Option<CpuSample>,
    pub memory: Option<MemorySample>,
    /// What is left of the machine's memory.
    pub memory_available: Option<u64>,
    /// Boot time, in seconds since the epoch.
    pub booted: Option<i64>,
    /// The filesystem holding the pods' directories (nodefs).
    pub fs: Option<FsStats>,
    pub rlimit: Option<RlimitStats>,
}

pub(crate) fn read(at_ns: i64, pods_dir: &Path) -> NodeSample {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let cgroup = Path::new(ROOT_MEMORY);
    let root = std::fs::read_to_string(cgroup.join("memory.usage_in_bytes"))
        .ok()
        .zip(std::fs::read_to_string(cgroup.join("memory.stat")).ok());
    let memory = memory(
        &meminfo,
        root.as_ref().map(|(u, s)| (u.as_str(), s.as_str())),
    );
    let at = podvisor_core::time::from_nanos(at_ns).unwrap_or_else(podvisor_core::time::now);
    NodeSample {
        cpu: busy_ticks(&stat).map(|t| CpuSample {
            at_ns,
            core_ns: t.saturating_mul(NANOS_PER_TICK),
        }),
        memory: memory.map(|m| MemorySample {
            at_ns,
            working_set: m.working_set,
            usage: Some(m.usage),
            rss: None,
        }),
        memory_available: memory.map(|m| m.available),
        booted: stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok()),
        fs: super::disk::filesystem(pods_dir, &at),
        rlimit: super::local::rlimit(&at),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Memory {
    working_set: u64,
    usage: u64,
    available: u64,
}

/// The node's memory from `/proc/meminfo` and, where there is one, the root memory
/// cgroup's usage and `memory.stat`.
fn memory(meminfo: &str, root_cgroup: Option<(&str, &str)>) -> Option<Memory> {
    let total = kib(meminfo, "MemTotal:")?;
    let from_cgroup = root_cgroup.and_then(|(usage, stat)| {
        let usage: u64 = usage.trim().parse().ok()?;
        let inactive = stat
            .lines()
            .find_map(|l| l.strip_prefix("total_inactive_file "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        Some((usage, usage.saturating_sub(inactive)))
    });
    let (usage, working_set) = match from_cgroup {
        Some(m) => m,
        None => {
            let used = in_use(meminfo)?;
            (used, used)
        }
    };
    Some(Memory {
        working_set,
        usage,
        available: total.saturating_sub(working_set),
    })
}

fn kib(meminfo: &str, key: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(key))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Ticks of every CPU spent in anything but idle and I/O wait.
fn busy_ticks(stat: &str) -> Option<u64> {
    let cpu = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let busy = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum();
    (f.len() >= 4).then_some(busy)
}

/// Bytes in use: all there is less what is available.
fn in_use(meminfo: &str) -> Option<u64> {
    Some(kib(meminfo, "MemTotal:")?.saturating_sub(kib(meminfo, "MemAvailable:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_and_memory_in_use_are_read_as_the_kernel_writes_them() {
        let stat = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4\nbtime 1700000000\n";
        assert_eq!(busy_ticks(stat), Some(161));
        let meminfo = "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n";
        assert_eq!(in_use(meminfo), Some(600 * 1024));
        let plain = memory(meminfo, None).unwrap();
        assert_eq!(
            (plain.working_set, plain.available),
            (600 * 1024, 400 * 1024)
        );
        let stat = "cache 9\ntotal_inactive_file 100000\n";
        let root = memory(meminfo, Some(("300000\n", stat))).unwrap();
        assert_eq!(
            (root.usage, root.working_set, root.available),
            (300_000, 200_000, 1000 * 1024 - 200_000),
            "the root cgroup's working set, the machine's memory"
        );
        let now = read(1, Path::new("/"));
        assert!(now.cpu.is_some(), "this machine has a /proc/stat");
        assert!(now.fs.is_some() && now.rlimit.is_some() && now.memory_available.is_some());
    }
}
