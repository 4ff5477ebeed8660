//! How a pod is described to the runtime: its sandbox config and each container's config
//! (the kubelet's `generatePodSandboxConfig` and `generateContainerConfig`), plus the
//! paths podvisor keeps per pod and the crash-loop backoff, derived from the runtime's
//! own records so it survives agent restarts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, Volume};
use podvisor_cri::labels;
use podvisor_cri::proto::{
    ContainerConfig, ContainerMetadata, DnsConfig, ImageSpec, Int64Value, KeyValue,
    LinuxContainerConfig, LinuxContainerResources, LinuxContainerSecurityContext,
    LinuxPodSandboxConfig, LinuxSandboxSecurityContext, Mount, NamespaceMode, NamespaceOption,
    PodSandboxConfig, PodSandboxMetadata, PortMapping, Protocol,
};
use podvisor_cri::{ContainerState, ContainerStatus};

use super::actions::{CONTAINER_HASH, container_hash, containers, host_network};
use crate::quantity;

/// How many times the container restarted before this instance.
pub const RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
/// The attempt from which crash-loop backoff counts (reset after a long run).
pub const BACKOFF_BASE: &str = "podvisor.io/backoff-base";
/// The pod's grace period, kept on its containers so an orphan is stopped as gently.
pub const GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";

/// Crash-loop backoff: first restart at once, then 10 s doubling to 5 min; a container
/// that ran 10 minutes starts over.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);
pub const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);

/// Node facts the configs need.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub node_name: String,
    /// Pod log directories live here (`<ns>_<name>_<uid>/<container>/<attempt>.log`).
    pub pod_log_dir: PathBuf,
    /// Per-pod state (`<uid>/volumes/...`).
    pub pod_dir: PathBuf,
    /// DNS for pods on the pod network: the host's resolver settings.
    pub dns: Option<DnsConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("volume {volume:?} mounted by container {container:?} is not declared")]
    MissingVolume { container: String, volume: String },
    #[error("volume {0:?}: only emptyDir and hostPath volumes are supported")]
    UnsupportedVolume(String),
    #[error("env {name:?}: {why}")]
    UnsupportedEnv { name: String, why: String },
    #[error("container {container:?}: {error}")]
    Quantity {
        container: String,
        error: quantity::QuantityError,
    },
}

pub fn pod_log_directory(node: &NodeConfig, pod: &Pod) -> PathBuf {
    node.pod_log_dir.join(format!(
        "{}_{}_{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    ))
}

pub fn pod_state_dir(node: &NodeConfig, uid: &str) -> PathBuf {
    node.pod_dir.join(uid)
}

pub fn empty_dir_path(node: &NodeConfig, uid: &str, volume: &str) -> PathBuf {
    pod_state_dir(node, uid)
        .join("volumes")
        .join("empty-dir")
        .join(volume)
}

/// The host's resolver settings from a resolv.conf.
pub fn read_dns(path: &Path) -> Option<DnsConfig> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut dns = DnsConfig::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => dns.servers.extend(words.next().map(String::from)),
            Some("search") => dns.searches = words.map(String::from).collect(),
            Some("options") => dns.options.extend(words.map(String::from)),
            _ => {}
        }
    }
    Some(dns)
}

fn pod_labels(node: &NodeConfig, pod: &Pod) -> HashMap<String, String> {
    let mut l: HashMap<String, String> = pod
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
    l.insert(
        labels::POD_NAME.into(),
        pod.metadata.name.clone().unwrap_or_default(),
    );
    l.insert(
        labels::POD_NAMESPACE.into(),
        pod.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
    );
    l.insert(labels::MANAGED_BY.into(), node.node_name.clone());
    l
}

/// A pod name may have 253 characters, a hostname 64 (sethostname fails beyond): cut to
/// 63 and drop trailing '-' and '.', as the kubelet does.
fn pod_hostname(mut name: String) -> String {
    if name.len() > 63 {
        // Validated names are ASCII; the boundary search only keeps a bad one from panicking.
        let cut = (0..=63)
            .rev()
            .find(|&i| name.is_char_boundary(i))
            .unwrap_or(0);
        name.truncate(cut);
        let trimmed = name.trim_end_matches(['-', '.']).len();
        name.truncate(trimmed);
    }
    name
}

pub fn sandbox_config(node: &NodeConfig, pod: &Pod, attempt: u32) -> PodSandboxConfig {
    let spec = pod.spec.clone().unwrap_or_default();
    let host_net = host_network(pod);
    let name = pod.metadata.name.clone().unwrap_or_default();
    let sc = spec.security_context.clone().unwrap_or_default();
    let port_mappings = containers(pod)
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
        .collect();
    let privileged = containers(pod)
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false)
        });
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.clone(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            namespace: pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
            attempt,
        }),
        // A host-network pod shares the node's UTS namespace, so it gets no hostname.
        hostname: if host_net {
            String::new()
        } else {
            pod_hostname(spec.hostname.clone().unwrap_or(name))
        },
        log_directory: pod_log_directory(node, pod).to_string_lossy().into_owned(),
        dns_config: if host_net { None } else { node.dns.clone() },
        port_mappings,
        labels: pod_labels(node, pod),
        annotations: pod
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        linux: Some(LinuxPodSandboxConfig {
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(NamespaceOption {
                    network: if host_net {
                        NamespaceMode::Node
                    } else {
                        NamespaceMode::Pod
                    } as i32,
                    pid: if spec.host_pid == Some(true) {
                        NamespaceMode::Node
                    } else if spec.share_process_namespace == Some(true) {
                        NamespaceMode::Pod
                    } else {
                        NamespaceMode::Container
                    } as i32,
                    ipc: if spec.host_ipc == Some(true) {
                        NamespaceMode::Node
                    } else {
                        NamespaceMode::Pod
                    } as i32,
                    ..Default::default()
                }),
                run_as_user: sc.run_as_user.map(|v| Int64Value { value: v }),
                run_as_group: sc.run_as_group.map(|v| Int64Value { value: v }),
                supplemental_groups: sc
                    .supplemental_groups
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .chain(sc.fs_group)
                    .collect(),
                privileged,
                ..Default::default()
            }),
            sysctls: sc
                .sysctls
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|s| (s.name, s.value))
                .collect(),
            ..Default::default()
        }),
    }
}

/// Crash-loop backoff owed by an exited container before its next start.
pub fn crash_backoff(exited: &ContainerStatus) -> Duration {
    let ran = Duration::from_nanos((exited.finished_at - exited.started_at).max(0) as u64);
    if ran >= BACKOFF_RESET_AFTER {
        return Duration::ZERO;
    }
    let base: u32 = exited
        .annotations
        .get(BACKOFF_BASE)
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    match exited.attempt.saturating_sub(base) {
        0 => Duration::ZERO,
        n => BACKOFF_INITIAL
            .saturating_mul(1u32.checked_shl(n - 1).unwrap_or(u32::MAX))
            .min(BACKOFF_MAX),
    }
}

/// The attempt number and backoff base for a container's next instance.
pub fn next_attempt(previous: Option<&ContainerStatus>) -> (u32, u32) {
    let Some(p) = previous else { return (0, 0) };
    let attempt = p.attempt + 1;
    let ran = Duration::from_nanos((p.finished_at - p.started_at).max(0) as u64);
    let base = if p.state == ContainerState::Exited && ran >= BACKOFF_RESET_AFTER {
        attempt
    } else {
        p.annotations
            .get(BACKOFF_BASE)
            .and_then(|b| b.parse().ok())
            .unwrap_or(0)
    };
    (attempt, base)
}

fn env_value(
    pod: &Pod,
    node: &NodeConfig,
    pod_ip: Option<&str>,
    e: &EnvVar,
) -> Result<String, ConfigError> {
    if let Some(v) = &e.value {
        return Ok(v.clone());
    }
    let Some(from) = &e.value_from else {
        return Ok(String::new());
    };
    let unsupported = |why: &str| ConfigError::UnsupportedEnv {
        name: e.name.clone(),
        why: why.into(),
    };
    let Some(field) = &from.field_ref else {
        return Err(unsupported("only fieldRef is supported in valueFrom"));
    };
    Ok(match field.field_path.as_str() {
        "metadata.name" => pod.metadata.name.clone().unwrap_or_default(),
        "metadata.namespace" => pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        "metadata.uid" => pod.metadata.uid.clone().unwrap_or_default(),
        "spec.nodeName" => node.node_name.clone(),
        "spec.serviceAccountName" => pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.podIP" => pod_ip.unwrap_or_default().to_string(),
        other => return Err(unsupported(&format!("fieldRef {other:?} is not supported"))),
    })
}

fn mounts(node: &NodeConfig, pod: &Pod, c: &Container) -> Result<Vec<Mount>, ConfigError> {
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let volumes: &[Volume] = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for m in c.volume_mounts.iter().flatten() {
        let v = volumes.iter().find(|v| v.name == m.name).ok_or_else(|| {
            ConfigError::MissingVolume {
                container: c.name.clone(),
                volume: m.name.clone(),
            }
        })?;
        let mut host = if v.empty_dir.is_some() {
            empty_dir_path(node, uid, &v.name)
        } else if let Some(hp) = &v.host_path {
            PathBuf::from(&hp.path)
        } else {
            return Err(ConfigError::UnsupportedVolume(v.name.clone()));
        };
        if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            host = host.join(sub);
        }
        out.push(Mount {
            container_path: m.mount_path.clone(),
            host_path: host.to_string_lossy().into_owned(),
            readonly: m.read_only.unwrap_or(false),
            ..Default::default()
        });
    }
    Ok(out)
}

fn resources(c: &Container) -> Result<LinuxContainerResources, ConfigError> {
    let q = |error| ConfigError::Quantity {
        container: c.name.clone(),
        error,
    };
    let res = c.resources.clone().unwrap_or_default();
    let get = |m: &Option<
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >,
               k: &str| { m.as_ref().and_then(|m| m.get(k)).map(|q| q.0.clone()) };
    let mut r = LinuxContainerResources::default();
    // Requests become relative weight (shares), limits become a hard quota, as in the kubelet.
    // No request at all is the kernel's minimum weight, as the kubelet gives it: left unset,
    // the runtime's default (1024, a whole CPU's worth) would let a container that asked for
    // nothing outweigh one that asked for half a CPU.
    let cpu_request = get(&res.requests, "cpu").or_else(|| get(&res.limits, "cpu"));
    let milli = match cpu_request {
        Some(cpu) => quantity::parse_milli(&cpu).map_err(q)?,
        None => 0,
    };
    // The kernel's range for shares.
    r.cpu_shares = (milli.saturating_mul(1024) / 1000).clamp(2, 262_144);
    if let Some(cpu) = get(&res.limits, "cpu") {
        let milli = quantity::parse_milli(&cpu).map_err(q)?;
        r.cpu_period = 100_000;
        r.cpu_quota = milli.saturating_mul(100).max(1000);
    }
    if let Some(mem) = get(&res.limits, "memory") {
        r.memory_limit_in_bytes = quantity::parse_units(&mem).map_err(q)?;
    }
    Ok(r)
}

/// The config of one container instance.
#[allow(clippy::too_many_arguments)]
pub fn container_config(
    node: &NodeConfig,
    pod: &Pod,
    c: &Container,
    image: &str,
    attempt: u32,
    backoff_base: u32,
    pod_ip: Option<&str>,
) -> Result<ContainerConfig, ConfigError> {
    let mut l = HashMap::from([
        (
            labels::POD_UID.to_string(),
            pod.metadata.uid.clone().unwrap_or_default(),
        ),
        (
            labels::POD_NAME.to_string(),
            pod.metadata.name.clone().unwrap_or_default(),
        ),
        (
            labels::POD_NAMESPACE.to_string(),
            pod.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
        ),
        (labels::CONTAINER_NAME.to_string(), c.name.clone()),
        (labels::MANAGED_BY.to_string(), node.node_name.clone()),
    ]);
    l.shrink_to_fit();
    let grace = super::super::pod_workers::pod::spec_grace_period(pod);
    let annotations = HashMap::from([
        (CONTAINER_HASH.to_string(), container_hash(c)),
        (RESTART_COUNT.to_string(), attempt.to_string()),
        (BACKOFF_BASE.to_string(), backoff_base.to_string()),
        (GRACE_PERIOD.to_string(), grace.to_string()),
    ]);
    let envs = c
        .env
        .iter()
        .flatten()
        .map(|e| {
            Ok(KeyValue {
                key: e.name.clone(),
                value: env_value(pod, node, pod_ip, e)?,
            })
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let sc = c.security_context.clone().unwrap_or_default();
    let pod_sc = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.clone())
        .unwrap_or_default();
    Ok(ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: c.name.clone(),
            attempt,
        }),
        image: Some(ImageSpec {
            image: image.to_string(),
            ..Default::default()
        }),
        command: c.command.clone().unwrap_or_default(),
        args: c.args.clone().unwrap_or_default(),
        working_dir: c.working_dir.clone().unwrap_or_default(),
        envs,
        mounts: mounts(node, pod, c)?,
        labels: l,
        annotations,
        log_path: format!("{}/{attempt}.log", c.name),
        stdin: c.stdin.unwrap_or(false),
        stdin_once: c.stdin_once.unwrap_or(false),
        tty: c.tty.unwrap_or(false),
        linux: Some(LinuxContainerConfig {
            resources: Some(resources(c)?),
            security_context: Some(LinuxContainerSecurityContext {
                privileged: sc.privileged.unwrap_or(false),
                run_as_user: sc
                    .run_as_user
                    .or(pod_sc.run_as_user)
                    .map(|v| Int64Value { value: v }),
                run_as_group: sc
                    .run_as_group
                    .or(pod_sc.run_as_group)
                    .map(|v| Int64Value { value: v }),
                readonly_rootfs: sc.read_only_root_filesystem.unwrap_or(false),
                no_new_privs: sc.allow_privilege_escalation == Some(false),
                ..Default::default()
            }),
        }),
        ..Default::default()
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
