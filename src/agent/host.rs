//! What the machine is: its CPUs and memory, what pods may take of them, and the facts the
//! Node object reports.

use anyhow::Context as _;
use podvisor_core::quantity;
use podvisor_kubelet::sync_loop::Allocatable;
use podvisor_node::node::NodeFacts;

use super::AgentConfig;

fn cpu_milli() -> i64 {
    cpu_cores() as i64 * 1000
}

pub(crate) fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(crate) fn memory_bytes() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(i64::MAX, |kb| kb * 1024)
}

/// As the kubelet with `failCgroupV1`: a cgroup v1 host (no `cgroup.controllers` at the
/// top of the cgroup filesystem) is refused, with the kubelet's reason.
pub(crate) fn check_cgroup_version(c: &AgentConfig, fs: &std::path::Path) -> anyhow::Result<()> {
    if c.node.fail_cgroup_v1 && !fs.join("cgroup.controllers").exists() {
        anyhow::bail!(
            "this host uses cgroup v1, which the configuration refuses (failCgroupV1: true, \
             the kubelet's default in a KubeletConfiguration): set failCgroupV1: false \
             (node.fail_cgroup_v1 = false) to run on cgroup v1"
        );
    }
    Ok(())
}

/// The node's address: configured, else the one the default route leaves by (a UDP
/// socket's route lookup; nothing is sent), else loopback.
pub(crate) fn address(c: &AgentConfig) -> std::net::IpAddr {
    use std::net::{IpAddr, Ipv4Addr, UdpSocket};
    let routed = || {
        let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
        s.connect((Ipv4Addr::new(8, 8, 8, 8), 53)).ok()?;
        Some(s.local_addr().ok()?.ip()).filter(|ip| !ip.is_unspecified())
    };
    c.node
        .address
        .or_else(routed)
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// What pods may take: the configured quantities, else the whole machine.
pub(crate) fn allocatable(c: &AgentConfig) -> anyhow::Result<Allocatable> {
    let cpu = c.allocatable.cpu.as_deref();
    let memory = c.allocatable.memory.as_deref();
    Ok(Allocatable {
        pods: c.allocatable.pods,
        cpu_milli: cpu
            .map(quantity::parse_milli)
            .transpose()
            .context("allocatable.cpu")?
            .unwrap_or_else(cpu_milli),
        memory_bytes: memory
            .map(quantity::parse_units)
            .transpose()
            .context("allocatable.memory")?
            .unwrap_or_else(memory_bytes),
    })
}

/// What the Node object says of this machine.
pub(crate) fn facts(
    cfg: &AgentConfig,
    node_name: &str,
    alloc: &Allocatable,
    (runtime_version, kubelet_port): (String, u16),
) -> NodeFacts {
    let storage = rustix::fs::statvfs(&cfg.state_dir).map_or(0, |s| {
        i64::try_from(s.f_blocks.saturating_mul(s.f_frsize)).unwrap_or(i64::MAX)
    });
    NodeFacts {
        name: node_name.to_string(),
        address: address(cfg).to_string(),
        cpu_milli: cpu_milli(),
        memory_bytes: memory_bytes(),
        pods: cfg.allocatable.pods,
        allocatable_cpu_milli: alloc.cpu_milli,
        allocatable_memory_bytes: alloc.memory_bytes,
        ephemeral_storage_bytes: storage,
        // The kubelet's default hard eviction threshold, nodefs.available<10%.
        allocatable_ephemeral_storage_bytes: storage - storage / 10,
        runtime_version,
        kubelet_port,
        agent_version: podvisor_core::version::GIT_VERSION.to_string(),
        // Validated with the config.
        taints: cfg
            .node
            .taints
            .iter()
            .filter_map(|t| podvisor_core::taints::parse(t).ok())
            .collect(),
        labels: cfg.node.labels.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_v1_host_is_refused_only_when_the_configuration_says_so() {
        let dir = std::env::temp_dir().join(format!("podvisor-cgroupfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = AgentConfig::default();
        assert!(
            check_cgroup_version(&c, &dir).is_ok(),
            "podvisor's TOML runs on v1"
        );
        c.node.fail_cgroup_v1 = true;
        let e = check_cgroup_version(&c, &dir).unwrap_err().to_string();
        assert!(e.contains("failCgroupV1"), "{e}");
        std::fs::write(dir.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        assert!(check_cgroup_version(&c, &dir).is_ok(), "cgroup v2");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
