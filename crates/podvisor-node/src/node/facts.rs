//! What the Node object says of the machine: capacity, addresses, `nodeInfo`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeDaemonEndpoints, NodeSpec, NodeStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

#[derive(Debug, Clone)]
pub struct NodeFacts {
    pub name: String,
    /// The node's address (`InternalIP`).
    pub address: String,
    pub cpu_milli: i64,
    pub memory_bytes: i64,
    pub pods: usize,
    /// Allocatable, as configured (defaults to capacity).
    pub allocatable_cpu_milli: i64,
    pub allocatable_memory_bytes: i64,
    /// The filesystem of the node's state directory (the kubelet's root directory), and
    /// what pods may take of it (less the hard eviction threshold's 10%); 0: unknown.
    pub ephemeral_storage_bytes: i64,
    pub allocatable_ephemeral_storage_bytes: i64,
    pub runtime_version: String,
    pub agent_version: String,
    /// What the node registers with (`[node] taints`).
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// Labels it registers with beside the well-known ones (`[node] labels`, the kubelet's
    /// `--node-labels`); a well-known one given here gives way to the machine's own.
    pub labels: BTreeMap<String, String>,
    /// The kubelet server's port (`daemonEndpoints`: where the API server reaches the
    /// node); 0 when it does not serve.
    pub kubelet_port: u16,
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

fn resources(cpu_milli: i64, memory: i64, pods: usize, storage: i64) -> BTreeMap<String, Quantity> {
    let cpu = if cpu_milli % 1000 == 0 {
        (cpu_milli / 1000).to_string()
    } else {
        format!("{cpu_milli}m")
    };
    let mut r = BTreeMap::from([
        ("cpu".into(), Quantity(cpu)),
        ("memory".into(), Quantity(format!("{}Ki", memory / 1024))),
        ("pods".into(), Quantity(pods.to_string())),
    ]);
    if storage > 0 {
        r.insert("ephemeral-storage".into(), Quantity(storage.to_string()));
    }
    r
}

fn address(type_: &str, address: String) -> NodeAddress {
    NodeAddress {
        type_: type_.into(),
        address,
    }
}

impl NodeFacts {
    /// The Node as first created: its name and the well-known labels.
    pub fn object(&self) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(self.name.clone());
        let mut labels = self.labels.clone();
        labels.extend([
            ("kubernetes.io/hostname".into(), self.name.clone()),
            ("kubernetes.io/os".into(), std::env::consts::OS.into()),
            ("kubernetes.io/arch".into(), arch().into()),
        ]);
        n.metadata.labels = Some(labels);
        n.spec = Some(NodeSpec {
            taints: Some(self.taints.clone()),
            ..NodeSpec::default()
        });
        n
    }

    /// Everything of the status but the conditions.
    pub fn status(&self) -> NodeStatus {
        NodeStatus {
            capacity: Some(resources(
                self.cpu_milli,
                self.memory_bytes,
                self.pods,
                self.ephemeral_storage_bytes,
            )),
            allocatable: Some(resources(
                self.allocatable_cpu_milli,
                self.allocatable_memory_bytes,
                self.pods,
                self.allocatable_ephemeral_storage_bytes,
            )),
            addresses: Some(vec![
                address("Hostname", hostname()),
                address("InternalIP", self.address.clone()),
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint {
                    port: i32::from(self.kubelet_port),
                }),
            }),
            node_info: Some(NodeSystemInfo {
                machine_id: read("/etc/machine-id"),
                system_uuid: read("/sys/class/dmi/id/product_uuid"),
                boot_id: read("/proc/sys/kernel/random/boot_id"),
                kernel_version: read("/proc/sys/kernel/osrelease"),
                os_image: os_image(),
                container_runtime_version: self.runtime_version.clone(),
                kubelet_version: self.agent_version.clone(),
                kube_proxy_version: String::new(),
                operating_system: std::env::consts::OS.into(),
                architecture: arch().into(),
                ..NodeSystemInfo::default()
            }),
            ..NodeStatus::default()
        }
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
