//! The node's own use, from /proc: CPU time spent outside idle (`/proc/stat`, in the
//! kernel's fixed 100 ticks a second) and memory in use (`MemTotal - MemAvailable`,
//! `/proc/meminfo`), and when the node booted.

use podvisor_cri::{CpuSample, MemorySample};

/// /proc/stat counts in USER_HZ, which Linux fixes at 100 for user space.
const NANOS_PER_TICK: u64 = 10_000_000;

pub(crate) struct NodeSample {
    pub cpu: Option<CpuSample>,
    pub memory: Option<MemorySample>,
    /// Boot time, in seconds since the epoch.
    pub booted: Option<i64>,
}

pub(crate) fn read(at_ns: i64) -> NodeSample {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    NodeSample {
        cpu: busy_ticks(&stat).map(|t| CpuSample {
            at_ns,
            core_ns: t.saturating_mul(NANOS_PER_TICK),
        }),
        memory: in_use(&meminfo).map(|b| MemorySample {
            at_ns,
            working_set: b,
            usage: Some(b),
            rss: None,
        }),
        booted: stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok()),
    }
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
    let kib = |key: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(kib("MemTotal:")?.saturating_sub(kib("MemAvailable:")?) * 1024)
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
        assert!(read(1).cpu.is_some(), "this machine has a /proc/stat");
    }
}
