//! What the Node object says of the machine: capacity, addresses, `nodeInfo`.

use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct NodeFacts {
    pub name: String,
    pub cpu_milli: i64,
    pub memory_bytes: i64,
    pub pods: usize,
    /// Allocatable, as configured (defaults to capacity).
    pub allocatable_cpu_milli: i64,
    pub allocatable_memory_bytes: i64,
    pub runtime_version: String,
    pub agent_version: String,
    /// What the node registers with (`[node] taints`).
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn os_image() -> String {
    read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "Linux".into())
}

fn hostname() -> String {
    read("/proc/sys/kernel/hostname")
}

fn resources(cpu_milli: i64, memory: i64, pods: usize) -> Value {
    let cpu = if cpu_milli % 1000 == 0 {
        (cpu_milli / 1000).to_string()
    } else {
        format!("{cpu_milli}m")
    };
    json!({"cpu": cpu, "memory": format!("{}Ki", memory / 1024), "pods": pods.to_string()})
}

impl NodeFacts {
    /// The Node as first created: its name and the well-known labels.
    pub fn object(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {
                "kubernetes.io/hostname": self.name,
                "kubernetes.io/os": std::env::consts::OS,
                "kubernetes.io/arch": arch(),
            }},
            "spec": {"taints": self.taints},
        })
    }

    /// Everything of the status but the conditions.
    pub fn status(&self) -> Value {
        json!({
            "capacity": resources(self.cpu_milli, self.memory_bytes, self.pods),
            "allocatable": resources(self.allocatable_cpu_milli, self.allocatable_memory_bytes, self.pods),
            "addresses": [{"type": "Hostname", "address": hostname()}, {"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": read("/etc/machine-id"),
                "systemUUID": read("/sys/class/dmi/id/product_uuid"),
                "bootID": read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": read("/proc/sys/kernel/osrelease"),
                "osImage": os_image(),
                "containerRuntimeVersion": self.runtime_version,
                "kubeletVersion": self.agent_version,
                "kubeProxyVersion": "",
                "operatingSystem": std::env::consts::OS,
                "architecture": arch(),
            },
        })
    }
}

/// Go's name for the architecture, as Kubernetes reports it.
fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
