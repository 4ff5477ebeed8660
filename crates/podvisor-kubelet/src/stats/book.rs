//! The samples the summary is computed from: for each container, the newest measurement
//! and the CPU time of the one before it (a rate needs two), and the same for the node.

use std::collections::HashMap;

use podvisor_core::stats::{
    ContainerStats, CpuStats, MemoryStats, NodeStats, PodReference, PodStats, Summary,
};
use podvisor_cri::{ContainerState, ContainerUsage, CpuSample, MemorySample, Pod, SandboxState};

use super::node::NodeSample;

struct Sampled {
    now: ContainerUsage,
    before: Option<CpuSample>,
}

#[derive(Default)]
pub(crate) struct Book {
    containers: HashMap<String, Sampled>,
    node_cpu: (Option<CpuSample>, Option<CpuSample>),
    node_memory: Option<MemorySample>,
    booted: Option<i64>,
    /// The pods of the newest sample (which pod a container is in, when each started).
    pods: Vec<Pod>,
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
        usage_bytes: m.usage,
        working_set_bytes: Some(m.working_set),
        rss_bytes: m.rss,
    })
}

impl Book {
    /// A new sample: every container's use, the node's, and the pods they run in.
    pub(crate) fn record(&mut self, usage: Vec<ContainerUsage>, node: NodeSample, pods: Vec<Pod>) {
        let mut next = HashMap::with_capacity(usage.len());
        for u in usage {
            let before = self.containers.get(&u.id).and_then(|s| s.now.cpu);
            next.insert(u.id.clone(), Sampled { now: u, before });
        }
        self.containers = next;
        self.node_cpu = (self.node_cpu.1.or(self.node_cpu.0), node.cpu);
        self.node_memory = node.memory;
        self.booted = node.booted.or(self.booted);
        self.pods = pods;
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
                memory: memory(self.node_memory),
            },
            pods,
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
            .map(|c| {
                let s = self.containers.get(&c.id);
                ContainerStats {
                    name: c.name.clone(),
                    start_time: podvisor_core::time::from_nanos(c.created_at),
                    cpu: s.and_then(|s| cpu(s.before, s.now.cpu)),
                    memory: s.and_then(|s| memory(s.now.memory)),
                }
            })
            .collect();
        Some(PodStats {
            pod_ref: PodReference {
                name: p.pod.name.clone(),
                namespace: p.pod.namespace.clone(),
                uid: p.pod.uid.clone(),
            },
            start_time: podvisor_core::time::from_nanos(sandbox.created_at),
            cpu: CpuStats::sum(containers.iter().filter_map(|c| c.cpu.as_ref())),
            memory: MemoryStats::sum(containers.iter().filter_map(|c| c.memory.as_ref())),
            containers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_needs_two_samples_and_time_between_them() {
        let s = |at_ns, core_ns| Some(CpuSample { at_ns, core_ns });
        assert_eq!(rate(None, s(10, 5)), None);
        assert_eq!(
            rate(s(1_000_000_000, 0), s(3_000_000_000, 500_000_000)),
            Some(250_000_000)
        );
        assert_eq!(rate(s(5, 10), s(5, 20)), None, "no time passed");
        assert_eq!(
            rate(s(1, 20), s(5, 10)),
            None,
            "the counter went back: a new container"
        );
    }
}
