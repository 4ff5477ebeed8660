//! Another process's memory and CPU, read from /proc: how the agent benchmark measures the
//! real `podvisor run` binary from outside, with nothing added to the agent.

use std::collections::BTreeMap;
use std::time::Duration;

/// Resident set size (VmRSS) of `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> std::io::Result<u64> {
    status_kib(pid, "VmRSS:").map(|k| k * 1024)
}

/// The anonymous part of `pid`'s resident set (RssAnon), in bytes: what it allocated,
/// without its program's code and other file-backed pages (shared and reclaimable).
pub fn anon_rss_bytes(pid: u32) -> std::io::Result<u64> {
    status_kib(pid, "RssAnon:").map(|k| k * 1024)
}

/// Peak resident set size (VmHWM) of `pid`, in bytes.
pub fn peak_rss_bytes(pid: u32) -> std::io::Result<u64> {
    status_kib(pid, "VmHWM:").map(|k| k * 1024)
}

fn status_kib(pid: u32, key: &str) -> std::io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no {key} in /proc/{pid}/status")))
}

/// User + system CPU time `pid` has used so far (clock-tick resolution, 10 ms usually).
pub fn cpu_time(pid: u32) -> std::io::Result<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_stat_cpu(&text, clock_ticks())
        .ok_or_else(|| std::io::Error::other(format!("malformed /proc/{pid}/stat")))
}

/// CPU time (user + system, with that of the children each has waited for: a shim's
/// `runc` calls) of every running process, summed by kind: `classify` maps a command name
/// (`/proc/PID/comm`) to a kind, or `None` to leave the process out. A process that ends
/// takes its time with it.
pub fn cpu_by_kind(
    classify: impl Fn(&str) -> Option<&'static str>,
) -> std::io::Result<BTreeMap<&'static str, Duration>> {
    let ticks = clock_ticks();
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone meanwhile
        };
        let comm = stat
            .find('(')
            .zip(stat.rfind(')'))
            .map_or("", |(a, b)| &stat[a + 1..b]);
        let (Some(kind), Some(cpu)) = (classify(comm), parse_stat_cpu_all(&stat, ticks)) else {
            continue;
        };
        *out.entry(kind).or_default() += cpu;
    }
    Ok(out)
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects; _SC_CLK_TCK is always a valid name.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// utime + stime (fields 14 and 15) from a /proc/PID/stat line. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted from the last ')'.
fn parse_stat_cpu(stat: &str, ticks_per_sec: u64) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11); // field 3 is the first after ')'
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / ticks_per_sec.max(1),
    ))
}

/// utime + stime + cutime + cstime (fields 14 to 17).
fn parse_stat_cpu_all(stat: &str, ticks_per_sec: u64) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields = rest.split_whitespace().skip(11).take(4);
    let ticks: u64 = fields.map(|f| f.parse::<u64>().ok()).sum::<Option<u64>>()?;
    Some(Duration::from_millis(ticks * 1000 / ticks_per_sec.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_fields_are_counted_from_the_last_parenthesis() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 1 1 1";
        assert_eq!(parse_stat_cpu(line, 100), Some(Duration::from_millis(3250)));
        assert_eq!(parse_stat_cpu("garbage", 100), None);
        // With the children waited for (fields 16 and 17).
        let line = "42 (shim) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 30 5 20 0 4 0 1 1 1";
        assert_eq!(
            parse_stat_cpu_all(line, 100),
            Some(Duration::from_millis(3600))
        );
    }

    #[test]
    fn sums_cpu_by_kind() {
        let mine = std::process::id().to_string();
        let comm = std::fs::read_to_string(format!("/proc/{mine}/comm")).unwrap();
        let by_kind = cpu_by_kind(|c| (c == comm.trim()).then_some("me")).unwrap();
        assert!(by_kind.contains_key("me"));
        assert!(cpu_by_kind(|_| None).unwrap().is_empty());
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(rss_bytes(me).unwrap() > 0);
        assert!(peak_rss_bytes(me).unwrap() >= rss_bytes(me).unwrap() / 2);
        cpu_time(me).unwrap();
    }
}
