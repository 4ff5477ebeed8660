//! What the node and its pods use, in the kubelet's Summary API shape
//! (`/stats/summary`, `k8s.io/kubelet/pkg/apis/stats/v1alpha1`): the node agent fills it
//! from the runtime's container stats, the API serves it as `metrics.k8s.io` for
//! `kubectl top`, and `podvisor top` prints it. Times are the API's (`metav1.Time`, second
//! precision when written); every figure is optional, as in the kubelet's. Besides CPU and
//! memory: filesystems (the node's, the images', each container's writable layer and logs,
//! each pod's volumes and ephemeral storage), the pods' networks and process counts.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub node: NodeStats,
    pub pods: Vec<PodStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    pub node_name: String,
    pub start_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub memory: Option<MemoryStats>,
    /// The filesystem of the node's root directory (the kubelet's nodefs).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub runtime: Option<RuntimeStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rlimit: Option<RlimitStats>,
}

/// The runtime's filesystems: where images are kept (the kubelet's imagefs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub image_fs: Option<FsStats>,
}

/// Process ids: how many the kernel allows, how many run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RlimitStats {
    pub time: Time,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub maxpid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub curproc: Option<i64>,
}

/// A filesystem, or what something takes of one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub inodes_free: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub inodes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub inodes_used: Option<u64>,
}

/// A pod's network: its default interface inline, every interface listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStats {
    pub time: Time,
    #[serde(flatten)]
    pub default: InterfaceStats,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub interfaces: Vec<InterfaceStats>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceStats {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rx_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rx_errors: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_errors: Option<u64>,
}

/// One of a pod's volumes: what it holds, and what its filesystem has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeStats {
    pub name: String,
    #[serde(flatten)]
    pub fs: FsStats,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStats {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub process_count: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    pub pod_ref: PodReference,
    pub start_time: Option<Time>,
    pub containers: Vec<ContainerStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub network: Option<NetworkStats>,
    #[serde(rename = "volume", skip_serializing_if = "Vec::is_empty", default)]
    pub volumes: Vec<VolumeStats>,
    /// The containers' writable layers and logs, and the pod's local volumes, together.
    #[serde(
        rename = "ephemeral-storage",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub ephemeral_storage: Option<FsStats>,
    #[serde(
        rename = "process_stats",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub process_stats: Option<ProcessStats>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodReference {
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    pub name: String,
    pub start_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub memory: Option<MemoryStats>,
    /// Its writable layer.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rootfs: Option<FsStats>,
    /// Its log files.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub logs: Option<FsStats>,
    /// The runtime's id of the container: not in the Summary API (never written), but
    /// cadvisor's `name` label of `/metrics/cadvisor`.
    #[serde(skip)]
    pub runtime_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    pub time: Time,
    /// The rate over the last sampling window, in billionths of a core.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage_nano_cores: Option<u64>,
    /// CPU time used since the container (or node) started.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage_core_nano_seconds: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    pub time: Time,
    /// The node's: what is left of its memory (capacity less the working set), the
    /// figure `memory.available` evicts on.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub usage_bytes: Option<u64>,
    /// What `kubectl top` calls memory: usage less the inactive page cache.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub working_set_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rss_bytes: Option<u64>,
}

impl CpuStats {
    /// The sum of several (a pod's containers): rates and times add up, the newest time
    /// stands.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a CpuStats>) -> Option<CpuStats> {
        all.into_iter().fold(None, |acc: Option<CpuStats>, c| {
            Some(match acc {
                None => c.clone(),
                Some(a) => CpuStats {
                    time: if c.time.0 > a.time.0 {
                        c.time.clone()
                    } else {
                        a.time
                    },
                    usage_nano_cores: add(a.usage_nano_cores, c.usage_nano_cores),
                    usage_core_nano_seconds: add(
                        a.usage_core_nano_seconds,
                        c.usage_core_nano_seconds,
                    ),
                },
            })
        })
    }
}

impl MemoryStats {
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a MemoryStats>) -> Option<MemoryStats> {
        all.into_iter().fold(None, |acc: Option<MemoryStats>, m| {
            Some(match acc {
                None => m.clone(),
                Some(a) => MemoryStats {
                    time: if m.time.0 > a.time.0 {
                        m.time.clone()
                    } else {
                        a.time
                    },
                    available_bytes: None,
                    usage_bytes: add(a.usage_bytes, m.usage_bytes),
                    working_set_bytes: add(a.working_set_bytes, m.working_set_bytes),
                    rss_bytes: add(a.rss_bytes, m.rss_bytes),
                },
            })
        })
    }
}

impl FsStats {
    /// What several things take of one filesystem together (a pod's ephemeral storage):
    /// used bytes and inodes add up, the filesystem's own figures are the first's.
    pub fn used_together<'a>(all: impl IntoIterator<Item = &'a FsStats>) -> Option<FsStats> {
        all.into_iter().fold(None, |acc: Option<FsStats>, f| {
            Some(match acc {
                None => f.clone(),
                Some(a) => FsStats {
                    used_bytes: add(a.used_bytes, f.used_bytes),
                    inodes_used: add(a.inodes_used, f.inodes_used),
                    ..a
                },
            })
        })
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_has_the_kubelets_names_and_sums_add_up() {
        let t = crate::time::from_nanos(1_700_000_000_000_000_000).unwrap();
        let cpu = |n| CpuStats {
            time: t.clone(),
            usage_nano_cores: Some(n),
            usage_core_nano_seconds: Some(n * 10),
        };
        let total = CpuStats::sum([&cpu(1), &cpu(2)]).unwrap();
        assert_eq!(total.usage_nano_cores, Some(3));
        let pod = PodStats {
            pod_ref: PodReference {
                name: "web".into(),
                namespace: "default".into(),
                uid: "u".into(),
            },
            start_time: Some(t.clone()),
            containers: vec![],
            cpu: Some(total),
            memory: None,
            network: Some(NetworkStats {
                time: t.clone(),
                default: InterfaceStats {
                    name: "eth0".into(),
                    rx_bytes: Some(5),
                    rx_errors: None,
                    tx_bytes: None,
                    tx_errors: None,
                },
                interfaces: vec![],
            }),
            volumes: vec![VolumeStats {
                name: "data".into(),
                fs: FsStats {
                    used_bytes: Some(4096),
                    ..FsStats::default()
                },
            }],
            ephemeral_storage: None,
            process_stats: Some(ProcessStats {
                process_count: Some(2),
            }),
        };
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["podRef"]["name"], "web");
        assert_eq!(v["cpu"]["usageNanoCores"], 3);
        assert_eq!(v["cpu"]["usageCoreNanoSeconds"], 30);
        assert!(v.get("memory").is_none());
        assert_eq!(v["network"]["name"], "eth0", "the default interface inline");
        assert_eq!(v["network"]["rxBytes"], 5);
        assert_eq!(v["volume"][0]["name"], "data");
        assert_eq!(v["volume"][0]["usedBytes"], 4096);
        assert_eq!(v["process_stats"]["process_count"], 2);
        let fs = |used| FsStats {
            used_bytes: Some(used),
            capacity_bytes: Some(100),
            inodes_used: Some(1),
            ..FsStats::default()
        };
        let both = FsStats::used_together([&fs(10), &fs(20)]).unwrap();
        assert_eq!(
            (both.used_bytes, both.capacity_bytes, both.inodes_used),
            (Some(30), Some(100), Some(2))
        );
    }
}
