//! A pod's sandbox config (the kubelet's `generatePodSandboxConfig`): metadata, the
//! kubelet's labels plus podvisor's owner label, hostname, DNS, log directory, port
//! mappings, and the Linux namespaces and security context.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use podvisor_core::PodExt;
use podvisor_cri::labels;
use podvisor_cri::proto::security_profile::ProfileType;
use podvisor_cri::proto::{
    Int64Value, LinuxPodSandboxConfig, LinuxSandboxSecurityContext, PodSandboxConfig,
    PodSandboxMetadata, PortMapping, Protocol, SecurityProfile,
};

use super::NodeConfig;
use super::paths::pod_log_directory;

/// The labels every sandbox and container of the pod carries.
pub(super) fn pod_labels(node: &NodeConfig, pod: &Pod) -> BTreeMap<String, String> {
    let mut l: BTreeMap<String, String> = pod
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    l.insert(
        labels::POD_UID.into(),
        pod.metadata.uid.clone().unwrap_or_default(),
    );
    l.insert(labels::POD_NAME.into(), pod.name().to_string());
    l.insert(labels::POD_NAMESPACE.into(), pod.namespace().to_string());
    l.insert(labels::MANAGED_BY.into(), node.node_name.clone());
    l
}

fn port_mappings(pod: &Pod) -> Vec<PortMapping> {
    pod.containers()
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| PortMapping {
            protocol: match p.protocol.as_deref() {
                Some("UDP") => Protocol::Udp as i32,
                Some("SCTP") => Protocol::Sctp as i32,
                _ => Protocol::Tcp as i32,
            },
            container_port: p.container_port,
            host_port: p.host_port.unwrap_or(0),
            host_ip: p.host_ip.clone().unwrap_or_default(),
        })
        .collect()
}

fn security(pod: &Pod, spec: &PodSpec) -> LinuxSandboxSecurityContext {
    let sc = spec.security_context.clone().unwrap_or_default();
    let privileged = pod
        .containers()
        .iter()
        .chain(pod.init_containers())
        .any(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false)
        });
    LinuxSandboxSecurityContext {
        namespace_options: Some(super::security::namespaces(spec, pod.host_network())),
        run_as_user: sc.run_as_user.map(|v| Int64Value { value: v }),
        run_as_group: sc.run_as_group.map(|v| Int64Value { value: v }),
        supplemental_groups: super::security::supplemental_groups(&sc),
        seccomp: Some(SecurityProfile {
            profile_type: match sc.seccomp_profile.as_ref().map(|p| p.type_.as_str()) {
                Some("RuntimeDefault") if !privileged => ProfileType::RuntimeDefault,
                _ => ProfileType::Unconfined,
            } as i32,
            ..Default::default()
        }),
        privileged,
        selinux_options: super::security::selinux(sc.se_linux_options.as_ref()),
        ..Default::default()
    }
}

pub fn sandbox_config(node: &NodeConfig, pod: &Pod, attempt: u32) -> PodSandboxConfig {
    let spec = pod.spec.clone().unwrap_or_default();
    let host_net = pod.host_network();
    let name = pod.name().to_string();
    let sysctls = spec
        .security_context
        .as_ref()
        .and_then(|s| s.sysctls.clone());
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.clone(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            namespace: pod.namespace().to_string(),
            attempt,
        }),
        // A host-network pod shares the node's UTS namespace, so it gets no hostname.
        hostname: if host_net {
            String::new()
        } else {
            super::hosts::sandbox_hostname(node, pod)
        },
        log_directory: pod_log_directory(node, pod).to_string_lossy().into_owned(),
        dns_config: super::dns::pod_dns(node, pod),
        port_mappings: port_mappings(pod),
        labels: pod_labels(node, pod),
        annotations: pod
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        linux: Some(LinuxPodSandboxConfig {
            security_context: Some(security(pod, &spec)),
            sysctls: sysctls
                .unwrap_or_default()
                .into_iter()
                .map(|s| {
                    (
                        podvisor_core::validation::security::dotted_sysctl(&s.name),
                        s.value,
                    )
                })
                .collect(),
            cgroup_parent: node
                .pod_cgroups
                .as_ref()
                .map(|c| c.name(pod))
                .unwrap_or_default(),
            ..Default::default()
        }),
    }
}
