//! The samples the summary is computed from: for each container, the newest measurement
//! and the CPU time of the one before it (a rate needs two), the same for the node, and
//! the newest of what is measured less often (pods' networks, the filesystems).

use std::collections::HashMap;

use podvisor_core::stats::{
    ContainerStats, CpuStats, FsStats, InterfaceStats, MemoryStats, NetworkStats, NodeStats,
    PodReference, PodStats, ProcessStats, RuntimeStats, Summary,
};
use podvisor_cri::{
    ContainerState, ContainerUsage, CpuSample, FsSample, InterfaceSample, MemorySample, Pod,
    SandboxState, SandboxUsage,
};

use super::local::DiskSample;
use super::node::NodeSample;

struct Sampled {
    now: ContainerUsage,
    before: Option<CpuSample>,
}

/// One sample of everything.
pub(crate) struct Sample {
    pub usage: Vec<ContainerUsage>,
    /// Empty where the runtime cannot say (containerd 1.6).
    pub sandboxes: Vec<SandboxUsage>,
    /// The image filesystem, with the size of the filesystem it is on.
    pub image_fs: Option<(FsSample, Option<FsStats>)>,
    pub pods: Vec<Pod>,
    pub host: NodeSample,
    /// Taken at most once a minute.
    pub disk: Option<DiskSample>,
}

#[derive(Default)]
pub(crate) struct Book {
    containers: HashMap<String, Sampled>,
    node_cpu: (Option<CpuSample>, Option<CpuSample>),
    node_memory: Option<MemorySample>,
    node_memory_available: Option<u64>,
    node_fs: Option<FsStats>,
    rlimit: Option<podvisor_core::stats::RlimitStats>,
    booted: Option<i64>,
    /// The pods of the newest sample (which pod a container is in, when each started).
    pods: Vec<Pod>,
    /// Each sandbox's network and processes, by sandbox id.
    sandboxes: HashMap<String, SandboxUsage>,
    image_fs: Option<FsStats>,
    disk: Option<DiskSample>,
    samples: u64,
}

/// Billionths of a core used between two samples.
fn rate(before: Option<CpuSample>, now: Option<CpuSample>) -> Option<u64> {
    let (b, n) = (before?, now?);
    let dt = u64::try_from(n.at_ns - b.at_ns).ok().filter(|d| *d > 0)?;
    let used = n.core_ns.checked_sub(b.core_ns)?;
    Some((u128::from(used) * 1_000_000_000 / u128::from(dt)) as u64)
}

fn cpu(before: Option<CpuSample>, now: Option<CpuSample>) -> Option<CpuStats> {
    let n = now?;
    Some(CpuStats {
        time: podvisor_core::time::from_nanos(n.at_ns)?,
        usage_nano_cores: rate(before, now),
        usage_core_nano_seconds: Some(n.core_ns),
    })
}

fn memory(m: Option<MemorySample>) -> Option<MemoryStats> {
    let m = m?;
    Some(MemoryStats {
        time: podvisor_core::time::from_nanos(m.at_ns)?,
        available_bytes: None,
        usage_bytes: m.usage,
        working_set_bytes: Some(m.working_set),
        rss_bytes: m.rss,
    })
}

/// What something takes of a filesystem, with that filesystem's own figures.
pub(super) fn fs_used(f: &FsSample, on: Option<&FsStats>) -> FsStats {
    // containerd leaves a writable layer's time unset: then the filesystem's.
    let at = (f.at_ns > 0).then(|| podvisor_core::time::from_nanos(f.at_ns));
    FsStats {
        time: at.flatten().or_else(|| on.and_then(|o| o.time.clone())),
        used_bytes: Some(f.used_bytes),
        inodes_used: f.inodes_used,
        ..on.cloned().unwrap_or_default()
    }
}

fn interface(i: &InterfaceSample) -> InterfaceStats {
    InterfaceStats {
        name: i.name.clone(),
        rx_bytes: i.rx_bytes,
        rx_errors: i.rx_errors,
        tx_bytes: i.tx_bytes,
        tx_errors: i.tx_errors,
    }
}

fn network(s: &SandboxUsage) -> Option<NetworkStats> {
    let first = s.interfaces.first()?;
    // containerd 2.1 leaves the network's time unset: it was measured just now.
    let at = (s.network_at_ns > 0).then(|| podvisor_core::time::from_nanos(s.network_at_ns));
    Some(NetworkStats {
        time: at.flatten().unwrap_or_else(podvisor_core::time::now),
        default: interface(first),
        interfaces: s.interfaces.iter().map(interface).collect(),
    })
}

impl Book {
    /// A new sample: every container's use, the node's, and the pods they run in.
    pub(crate) fn record(&mut self, s: Sample) {
        let mut next = HashMap::with_capacity(s.usage.len());
        for u in s.usage {
            let before = self.containers.get(&u.id).and_then(|s| s.now.cpu);
            next.insert(u.id.clone(), Sampled { now: u, before });
        }
        self.containers = next;
        self.node_cpu = (self.node_cpu.1.or(self.node_cpu.0), s.host.cpu);
        self.node_memory = s.host.memory;
        self.node_memory_available = s.host.memory_available;
        self.node_fs = s.host.fs;
        self.rlimit = s.host.rlimit;
        self.booted = s.host.booted.or(self.booted);
        self.pods = s.pods;
        self.sandboxes = s.sandboxes.into_iter().map(|u| (u.id.clone(), u)).collect();
        self.image_fs = s.image_fs.map(|(f, on)| fs_used(&f, on.as_ref()));
        if s.disk.is_some() {
            self.disk = s.disk;
        }
        self.samples += 1;
    }

    pub(crate) fn samples(&self) -> u64 {
        self.samples
    }

    /// The kubelet's summary: the node, and every pod with a ready sandbox with its
    /// running containers.
    pub(crate) fn summary(&self, node_name: &str) -> Summary {
        let pods = self.pods.iter().filter_map(|p| self.pod(p)).collect();
        Summary {
            node: NodeStats {
                node_name: node_name.to_string(),
                start_time: self
                    .booted
                    .and_then(|s| podvisor_core::time::from_nanos(s.saturating_mul(1_000_000_000))),
                cpu: cpu(self.node_cpu.0, self.node_cpu.1),
                memory: memory(self.node_memory).map(|m| MemoryStats {
                    available_bytes: self.node_memory_available,
                    ..m
                }),
                fs: self.node_fs.clone(),
                runtime: Some(RuntimeStats {
                    image_fs: self.image_fs.clone(),
                }),
                rlimit: self.rlimit.clone(),
            },
            pods,
        }
    }

    fn container(&self, uid: &str, c: &podvisor_cri::Container) -> ContainerStats {
        let s = self.containers.get(&c.id);
        let disk = self.disk.as_ref().and_then(|d| d.pods.get(uid));
        let rootfs = s.and_then(|s| s.now.rootfs.as_ref());
        ContainerStats {
            name: c.name.clone(),
            start_time: podvisor_core::time::from_nanos(c.created_at),
            cpu: s.and_then(|s| cpu(s.before, s.now.cpu)),
            memory: s.and_then(|s| memory(s.now.memory)),
            rootfs: rootfs.map(|f| fs_used(f, self.image_fs.as_ref())),
            logs: disk.and_then(|d| d.logs.get(&c.name).cloned()),
            runtime_id: c.id.clone(),
        }
    }

    fn pod(&self, p: &Pod) -> Option<PodStats> {
        let sandbox = p
            .sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .max_by_key(|s| s.created_at)?;
        let containers: Vec<ContainerStats> = p
            .containers
            .iter()
            .filter(|c| c.state == ContainerState::Running && c.sandbox_id == sandbox.id)
            .map(|c| self.container(&p.pod.uid, c))
            .collect();
        let disk = self.disk.as_ref().and_then(|d| d.pods.get(&p.pod.uid));
        let measured = self.sandboxes.get(&sandbox.id);
        let held = containers
            .iter()
            .flat_map(|c| c.rootfs.iter().chain(c.logs.iter()))
            .chain(disk.iter().flat_map(|d| d.local_volumes.iter()));
        Some(PodStats {
            pod_ref: PodReference {
                name: p.pod.name.clone(),
                namespace: p.pod.namespace.clone(),
                uid: p.pod.uid.clone(),
            },
            start_time: podvisor_core::time::from_nanos(sandbox.created_at),
            cpu: CpuStats::sum(containers.iter().filter_map(|c| c.cpu.as_ref())),
            memory: MemoryStats::sum(containers.iter().filter_map(|c| c.memory.as_ref())),
            network: measured.and_then(network),
            volumes: disk.map(|d| d.volumes.clone()).unwrap_or_default(),
            ephemeral_storage: FsStats::used_together(held),
            process_stats: measured.map(|m| ProcessStats {
                process_count: m.processes,
            }),
            containers,
        })
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
