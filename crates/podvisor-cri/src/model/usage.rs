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

/// What a filesystem holds of something (a container's writable layer, the images), and
/// where that filesystem is mounted, as the runtime measures it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsSample {
    pub at_ns: i64,
    pub mountpoint: String,
    pub used_bytes: u64,
    pub inodes_used: Option<u64>,
}

impl From<proto::FilesystemUsage> for FsSample {
    fn from(f: proto::FilesystemUsage) -> Self {
        Self {
            at_ns: f.timestamp,
            mountpoint: f.fs_id.map(|i| i.mountpoint).unwrap_or_default(),
            used_bytes: f.used_bytes.map_or(0, |v| v.value),
            inodes_used: f.inodes_used.map(|v| v.value),
        }
    }
}

/// One container's use. A container without a running task has neither CPU nor memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    pub id: String,
    pub name: String,
    pub pod: PodRef,
    pub labels: Labels,
    pub cpu: Option<CpuSample>,
    pub memory: Option<MemorySample>,
    /// Its writable layer.
    pub rootfs: Option<FsSample>,
}

/// A network interface's counters since the pod's network was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceSample {
    pub name: String,
    pub rx_bytes: Option<u64>,
    pub rx_errors: Option<u64>,
    pub tx_bytes: Option<u64>,
    pub tx_errors: Option<u64>,
}

/// What a pod's sandbox measures that no container does (CRI `PodSandboxStats`): its
/// network, the default interface first, and how many processes the pod runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxUsage {
    pub id: String,
    pub pod: PodRef,
    pub network_at_ns: i64,
    pub interfaces: Vec<InterfaceSample>,
    pub processes: Option<u64>,
}

impl From<proto::NetworkInterfaceUsage> for InterfaceSample {
    fn from(i: proto::NetworkInterfaceUsage) -> Self {
        Self {
            name: i.name,
            rx_bytes: i.rx_bytes.map(|v| v.value),
            rx_errors: i.rx_errors.map(|v| v.value),
            tx_bytes: i.tx_bytes.map(|v| v.value),
            tx_errors: i.tx_errors.map(|v| v.value),
        }
    }
}

impl From<proto::PodSandboxStats> for SandboxUsage {
    fn from(s: proto::PodSandboxStats) -> Self {
        let a = s.attributes.unwrap_or_default();
        let m = a.metadata.unwrap_or_default();
        let linux = s.linux.unwrap_or_default();
        let network = linux.network.unwrap_or_default();
        let default = network.default_interface.map(InterfaceSample::from);
        let others = network.interfaces.into_iter().map(InterfaceSample::from);
        let mut interfaces: Vec<InterfaceSample> = default.into_iter().collect();
        for i in others {
            if !interfaces.iter().any(|d| d.name == i.name) {
                interfaces.push(i);
            }
        }
        Self {
            id: a.id,
            pod: PodRef {
                uid: m.uid,
                name: m.name,
                namespace: m.namespace,
            },
            network_at_ns: network.timestamp,
            interfaces,
            processes: linux.process.and_then(|p| p.process_count).map(|v| v.value),
        }
    }
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
            rootfs: s.writable_layer.map(FsSample::from),
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

    #[test]
    fn a_sandboxs_network_lists_the_default_interface_first_and_once() {
        let iface = |name: &str, rx| proto::NetworkInterfaceUsage {
            name: name.into(),
            rx_bytes: Some(proto::UInt64Value { value: rx }),
            ..Default::default()
        };
        let stats = proto::PodSandboxStats {
            attributes: Some(proto::PodSandboxAttributes {
                id: "s1".into(),
                metadata: Some(proto::PodSandboxMetadata {
                    name: "web".into(),
                    uid: "u1".into(),
                    namespace: "default".into(),
                    attempt: 0,
                }),
                ..Default::default()
            }),
            linux: Some(proto::LinuxPodSandboxStats {
                network: Some(proto::NetworkUsage {
                    timestamp: 9,
                    default_interface: Some(iface("eth0", 100)),
                    interfaces: vec![iface("eth0", 100), iface("eth1", 7)],
                }),
                process: Some(proto::ProcessUsage {
                    timestamp: 9,
                    process_count: Some(proto::UInt64Value { value: 3 }),
                }),
                ..Default::default()
            }),
        };
        let u = SandboxUsage::from(stats);
        assert_eq!((u.id.as_str(), u.pod.uid.as_str()), ("s1", "u1"));
        let names: Vec<_> = u.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "eth1"]);
        assert_eq!(u.interfaces[1].rx_bytes, Some(7));
        assert_eq!(u.processes, Some(3));
    }
}
