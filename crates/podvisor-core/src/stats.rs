//! What the node and its pods use, in the kubelet's Summary API shape
//! (`/stats/summary`, `k8s.io/kubelet/pkg/apis/stats/v1alpha1`): the node agent fills it
//! from the runtime's container stats, the API serves it as `metrics.k8s.io` for
//! `kubectl top`, and `podvisor top` prints it. Times are the API's (`metav1.Time`, second
//! precision when written); every figure is optional, as in the kubelet's.

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
                    usage_bytes: add(a.usage_bytes, m.usage_bytes),
                    working_set_bytes: add(a.working_set_bytes, m.working_set_bytes),
                    rss_bytes: add(a.rss_bytes, m.rss_bytes),
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
        };
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["podRef"]["name"], "web");
        assert_eq!(v["cpu"]["usageNanoCores"], 3);
        assert_eq!(v["cpu"]["usageCoreNanoSeconds"], 30);
        assert!(v.get("memory").is_none());
    }
}
