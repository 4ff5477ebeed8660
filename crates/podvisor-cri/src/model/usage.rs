//! What a container uses, as the runtime measures it (CRI `ContainerStats`): cumulative
//! CPU time and the memory working set, each with the time it was read. A rate is the
//! caller's to compute from two samples: containerd's own `usage_nano_cores` is kept per
//! container for every caller at once, so each caller shortens another's window.

use super::{Labels, PodRef};
use crate::labels;
use crate::proto;

/// CPU time used so far, in nanoseconds, read at `at_ns` (nanoseconds since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    pub at_ns: i64,
    pub core_ns: u64,
}

/// Memory in use, read at `at_ns`: the working set (what the kubelet, metrics-server and
/// `kubectl top` call memory), and the usage and RSS when the runtime says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySample {
    pub at_ns: i64,
    pub working_set: u64,
    pub usage: Option<u64>,
    pub rss: Option<u64>,
}

/// One container's use. A container without a running task has neither sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    pub id: String,
    pub name: String,
    pub pod: PodRef,
    pub labels: Labels,
    pub cpu: Option<CpuSample>,
    pub memory: Option<MemorySample>,
}

impl From<proto::ContainerStats> for ContainerUsage {
    fn from(s: proto::ContainerStats) -> Self {
        let a = s.attributes.unwrap_or_default();
        let label = |k: &str| a.labels.get(k).cloned().unwrap_or_default();
        let pod = PodRef {
            uid: label(labels::POD_UID),
            name: label(labels::POD_NAME),
            namespace: label(labels::POD_NAMESPACE),
        };
        let cpu = s.cpu.and_then(|c| {
            Some(CpuSample {
                at_ns: c.timestamp,
                core_ns: c.usage_core_nano_seconds?.value,
            })
        });
        let memory = s.memory.and_then(|m| {
            Some(MemorySample {
                at_ns: m.timestamp,
                working_set: m.working_set_bytes?.value,
                usage: m.usage_bytes.map(|v| v.value),
                rss: m.rss_bytes.map(|v| v.value),
            })
        });
        Self {
            id: a.id,
            name: a.metadata.map(|m| m.name).unwrap_or_default(),
            pod,
            labels: a.labels.into_iter().collect(),
            cpu,
            memory,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_containers_stats_become_samples_and_a_stopped_ones_none() {
        let labels = std::collections::BTreeMap::from([
            (labels::POD_UID.to_string(), "u1".to_string()),
            (labels::POD_NAME.to_string(), "web".to_string()),
            (labels::POD_NAMESPACE.to_string(), "default".to_string()),
        ]);
        let running = proto::ContainerStats {
            attributes: Some(proto::ContainerAttributes {
                id: "c1".into(),
                metadata: Some(proto::ContainerMetadata {
                    name: "app".into(),
                    attempt: 0,
                }),
                labels: labels.clone(),
                annotations: Default::default(),
            }),
            cpu: Some(proto::CpuUsage {
                timestamp: 5,
                usage_core_nano_seconds: Some(proto::UInt64Value { value: 42 }),
                usage_nano_cores: None,
            }),
            memory: Some(proto::MemoryUsage {
                timestamp: 6,
                working_set_bytes: Some(proto::UInt64Value { value: 4096 }),
                ..Default::default()
            }),
            writable_layer: None,
        };
        let u = ContainerUsage::from(running);
        assert_eq!((u.name.as_str(), u.pod.name.as_str()), ("app", "web"));
        assert_eq!(
            u.cpu,
            Some(CpuSample {
                at_ns: 5,
                core_ns: 42
            })
        );
        assert_eq!(u.memory.map(|m| m.working_set), Some(4096));
        let stopped = ContainerUsage::from(proto::ContainerStats::default());
        assert!(stopped.cpu.is_none() && stopped.memory.is_none());
    }
}
