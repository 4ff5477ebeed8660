//! Minimal sandbox and container configs carrying podvisor's labels: what integration
//! tests and the raw-CRI benchmark run, so they exercise the same label scheme as the agent.

use std::collections::BTreeMap;

use crate::labels;
use crate::proto::*;

/// The test image `scripts/containerd-up` builds and imports.
pub const TEST_IMAGE: &str = "localhost/podvisor/busybox:test";

/// The owner recorded on sample pods (no agent's node is called that).
pub const SAMPLE_OWNER: &str = "podvisor-samples";

fn pod_labels(uid: &str, name: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::POD_UID.to_string(), uid.to_string()),
        (labels::POD_NAME.to_string(), name.to_string()),
        (labels::POD_NAMESPACE.to_string(), namespace.to_string()),
        (labels::MANAGED_BY.to_string(), SAMPLE_OWNER.to_string()),
    ])
}

/// A sandbox for pod `name` in namespace `default`, on the host network or on CNI.
pub fn sandbox_config(
    uid: &str,
    name: &str,
    host_network: bool,
    log_dir: &str,
) -> PodSandboxConfig {
    let network = if host_network {
        NamespaceMode::Node
    } else {
        NamespaceMode::Pod
    };
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.to_string(),
            uid: uid.to_string(),
            namespace: "default".to_string(),
            attempt: 0,
        }),
        // A host-network pod shares the node's UTS namespace, so it cannot have a hostname.
        hostname: if host_network {
            String::new()
        } else {
            name.to_string()
        },
        log_directory: log_dir.to_string(),
        labels: pod_labels(uid, name, "default"),
        linux: Some(LinuxPodSandboxConfig {
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(NamespaceOption {
                    network: network as i32,
                    pid: NamespaceMode::Container as i32,
                    ipc: NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A container of `sandbox` running `command` in the test image, logging to
/// `<sandbox log dir>/<name>/0.log`.
pub fn container_config(
    sandbox: &PodSandboxConfig,
    name: &str,
    command: &[&str],
) -> ContainerConfig {
    let meta = sandbox.metadata.clone().unwrap_or_default();
    let mut labels = pod_labels(&meta.uid, &meta.name, &meta.namespace);
    labels.insert(labels::CONTAINER_NAME.to_string(), name.to_string());
    ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: name.to_string(),
            attempt: 0,
        }),
        image: Some(ImageSpec {
            image: TEST_IMAGE.to_string(),
            ..Default::default()
        }),
        command: command.iter().map(|s| s.to_string()).collect(),
        labels,
        log_path: format!("{name}/0.log"),
        ..Default::default()
    }
}
