//! One container instance's config (the kubelet's `generateContainerConfig`): command and
//! arguments expanded with the environment made before, mounts, resources as Linux resources, security
//! context, labels and the annotations podvisor reads back (spec hash, attempt, backoff).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod, VolumeMount};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use podvisor_core::{PodExt, PodUid, quantity};
use podvisor_cri::labels;
use podvisor_cri::proto::{
    ContainerConfig, ContainerMetadata, ImageSpec, KeyValue, LinuxContainerConfig,
    LinuxContainerResources, Mount, MountPropagation,
};
use podvisor_volumes::{Environment, volume_dir};

use super::backoff::BACKOFF_BASE;
use super::paths::{empty_dir_path, pod_state_dir, subpath_target};
use super::security::{container_security, host_apparmor};
use super::{ConfigError, NodeConfig};
use crate::kuberuntime::actions::{CONTAINER_HASH, container_hash};
use crate::kuberuntime::subpath::SubPath;

/// How many times the container restarted before this instance.
pub(crate) const RESTART_COUNT: &str = "io.kubernetes.container.restartCount";

/// One instance of a container, as it is about to be created.
pub struct Instance<'a> {
    pub pod: &'a Pod,
    pub container: &'a Container,
    /// The image reference the image manager answered.
    pub image: &'a str,
    pub attempt: u32,
    /// The attempt at which the current crash-loop streak started.
    pub backoff_base: u32,
    /// The container's environment, made from its `envFrom` and `env`
    /// (`podvisor_volumes::container_env`).
    pub env: &'a Environment,
    /// The pod's hosts file, mounted at `/etc/hosts` unless the container mounts something
    /// there itself (`None`: the runtime's own).
    pub etc_hosts: Option<&'a Path>,
    /// This instance's termination-message file, bound to its `terminationMessagePath`.
    pub termination_log: Option<&'a Path>,
}

/// Where a container writes its termination message unless it says otherwise.
pub const TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// Where a volume mount's volume is on the host.
fn volume_root(
    pod: &Pod,
    node: &NodeConfig,
    c: &Container,
    m: &VolumeMount,
) -> Result<PathBuf, ConfigError> {
    let uid = PodUid::from(pod.metadata.uid.as_deref().unwrap_or(""));
    let v = pod
        .volumes()
        .iter()
        .find(|v| v.name == m.name)
        .ok_or_else(|| ConfigError::MissingVolume {
            container: c.name.clone(),
            volume: m.name.clone(),
        })?;
    if v.empty_dir.is_some() {
        Ok(empty_dir_path(node, &uid, &v.name))
    } else if let Some(hp) = &v.host_path {
        Ok(PathBuf::from(&hp.path))
    } else if let Some(dir) = volume_dir(&pod_state_dir(node, &uid).join("volumes"), v) {
        Ok(dir)
    } else {
        Err(ConfigError::UnsupportedVolume(v.name.clone()))
    }
}

/// `mountPropagation` as CRI names it (validation allows only these three).
fn propagation(m: &VolumeMount) -> MountPropagation {
    match m.mount_propagation.as_deref() {
        Some("HostToContainer") => MountPropagation::PropagationHostToContainer,
        Some("Bidirectional") => MountPropagation::PropagationBidirectional,
        _ => MountPropagation::PropagationPrivate,
    }
}

fn sub_path(m: &VolumeMount) -> Option<&str> {
    m.sub_path.as_deref().filter(|s| !s.is_empty())
}

/// The subPath mounts of container `c` to prepare before it is created: what each
/// resolves beneath, and where it is bound (the path `mounts` gives the runtime).
pub(crate) fn sub_paths(
    node: &NodeConfig,
    pod: &Pod,
    c: &Container,
) -> Result<Vec<SubPath>, ConfigError> {
    let uid = PodUid::from(pod.metadata.uid.as_deref().unwrap_or(""));
    let mut out = Vec::new();
    for (index, m) in c.volume_mounts.iter().flatten().enumerate() {
        if let Some(sub) = sub_path(m) {
            out.push(SubPath {
                volume: m.name.clone(),
                root: volume_root(pod, node, c, m)?,
                sub: sub.to_string(),
                target: subpath_target(node, &uid, &m.name, &c.name, index),
            });
        }
    }
    Ok(out)
}

/// The container's mounts. A subPath is never joined onto the volume's path here: a
/// symlink planted in the volume would lead the runtime anywhere on the host. The runtime
/// gets the bind `sub_paths` prepares instead. A volume filled from objects is always
/// read-only (its files are the node's to write), as the kubelet mounts it.
fn mounts(
    node: &NodeConfig,
    pod: &Pod,
    c: &Container,
    (etc_hosts, termination_log): (Option<&Path>, Option<&Path>),
) -> Result<Vec<Mount>, ConfigError> {
    let uid = PodUid::from(pod.metadata.uid.as_deref().unwrap_or(""));
    let mut out = Vec::new();
    for (index, m) in c.volume_mounts.iter().flatten().enumerate() {
        let root = volume_root(pod, node, c, m)?;
        let host = match sub_path(m) {
            Some(_) => subpath_target(node, &uid, &m.name, &c.name, index),
            None => root,
        };
        let filled = pod
            .volumes()
            .iter()
            .any(|v| v.name == m.name && volume_dir(Path::new(""), v).is_some());
        out.push(Mount {
            container_path: m.mount_path.clone(),
            host_path: host.to_string_lossy().into_owned(),
            readonly: m.read_only.unwrap_or(false) || filled,
            propagation: propagation(m) as i32,
            ..Default::default()
        });
    }
    let files = [
        (etc_hosts, "/etc/hosts"),
        (termination_log, termination_path(c)),
    ];
    for (host, at) in files {
        let Some(host) = host.filter(|_| !out.iter().any(|m| m.container_path == at)) else {
            continue;
        };
        out.push(Mount {
            container_path: at.into(),
            host_path: host.to_string_lossy().into_owned(),
            ..Default::default()
        });
    }
    Ok(out)
}

/// The container's `terminationMessagePath`.
pub(crate) fn termination_path(c: &Container) -> &str {
    c.termination_message_path
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(TERMINATION_MESSAGE_PATH)
}

fn get(m: &Option<BTreeMap<String, Quantity>>, k: &str) -> Option<String> {
    m.as_ref().and_then(|m| m.get(k)).map(|q| q.0.clone())
}

/// The container's runtime resources: CPU weight and quota, memory limit, and the
/// `oom_score_adj` its pod's QoS class gives it (`podvisor_core::oom`).
pub(crate) fn resources(
    c: &Container,
    oom_score_adj: i64,
) -> Result<LinuxContainerResources, ConfigError> {
    let q = |error| ConfigError::Quantity {
        container: c.name.clone(),
        error,
    };
    let res = c.resources.clone().unwrap_or_default();
    let mut r = LinuxContainerResources {
        oom_score_adj,
        ..LinuxContainerResources::default()
    };
    // Requests become relative weight (shares), limits become a hard quota, as in the kubelet.
    // No request at all is the kernel's minimum weight, as the kubelet gives it: left unset,
    // the runtime's default (1024, a whole CPU's worth) would let a container that asked for
    // nothing outweigh one that asked for half a CPU.
    let milli = match get(&res.requests, "cpu").or_else(|| get(&res.limits, "cpu")) {
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

fn instance_labels(node: &NodeConfig, i: &Instance) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            labels::POD_UID.to_string(),
            i.pod.metadata.uid.clone().unwrap_or_default(),
        ),
        (labels::POD_NAME.to_string(), i.pod.name().to_string()),
        (
            labels::POD_NAMESPACE.to_string(),
            i.pod.namespace().to_string(),
        ),
        (labels::CONTAINER_NAME.to_string(), i.container.name.clone()),
        (labels::MANAGED_BY.to_string(), node.node_name.clone()),
    ])
}

/// The annotations podvisor reads back from a container: its spec hash, attempt, backoff
/// base, grace period and termination-message policy and file.
fn instance_annotations(i: &Instance) -> BTreeMap<String, String> {
    let c = i.container;
    let mut annotations = BTreeMap::from([
        (CONTAINER_HASH.to_string(), container_hash(c)),
        (RESTART_COUNT.to_string(), i.attempt.to_string()),
        (BACKOFF_BASE.to_string(), i.backoff_base.to_string()),
        (
            labels::GRACE_PERIOD.to_string(),
            i.pod.spec_grace_period().seconds().to_string(),
        ),
        (
            labels::TERMINATION_POLICY.to_string(),
            c.termination_message_policy
                .clone()
                .unwrap_or_else(|| "File".into()),
        ),
    ]);
    if let Some(log) = i.termination_log {
        annotations.insert(
            labels::TERMINATION_LOG.into(),
            log.to_string_lossy().into_owned(),
        );
    }
    if let Some(request) = memory_request(c) {
        annotations.insert(MEMORY_REQUEST.into(), request);
    }
    annotations
}

/// The memory request a container was made with: no runtime applies or reports one, so
/// a resize of it alone is told from this (`actions/resize.rs`).
pub(crate) const MEMORY_REQUEST: &str = "podvisor.io/memory-request";

/// A container's memory request, in bytes.
pub(crate) fn memory_request(c: &Container) -> Option<String> {
    let q = c.resources.as_ref()?.requests.as_ref()?.get("memory")?;
    quantity::parse_units(&q.0).ok().map(|b| b.to_string())
}

/// `$(VAR)` in the command and its arguments, from the environment (the kubelet's
/// `ExpandContainerCommandAndArgs`), within what a process can be given beside that
/// environment.
fn command_and_args(i: &Instance) -> Result<(Vec<String>, Vec<String>), ConfigError> {
    let mut budget = podvisor_core::expand::Budget::default();
    let too_long = |error| ConfigError::TooLong {
        container: i.container.name.clone(),
        error,
    };
    for (k, v) in &i.env.vars {
        budget.take(k.len() + v.len() + 1).map_err(too_long)?;
    }
    let mut expand = |v: &Option<Vec<String>>| -> Result<Vec<String>, ConfigError> {
        let strings = v.iter().flatten();
        let lookup = |n: &str| i.env.get(n);
        strings
            .map(|s| budget.expand(s, lookup).map_err(too_long))
            .collect()
    };
    Ok((expand(&i.container.command)?, expand(&i.container.args)?))
}

/// The config of one container instance.
pub fn container_config(node: &NodeConfig, i: &Instance) -> Result<ContainerConfig, ConfigError> {
    let c = i.container;
    let envs = i
        .env
        .vars
        .iter()
        .map(|(key, value)| KeyValue {
            key: key.clone(),
            value: value.clone(),
        })
        .collect();
    let (command, args) = command_and_args(i)?;
    Ok(ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: c.name.clone(),
            attempt: i.attempt,
        }),
        image: Some(ImageSpec {
            image: i.image.to_string(),
            ..Default::default()
        }),
        command,
        args,
        working_dir: c.working_dir.clone().unwrap_or_default(),
        envs,
        mounts: mounts(node, i.pod, c, (i.etc_hosts, i.termination_log))?,
        labels: instance_labels(node, i),
        annotations: instance_annotations(i),
        log_path: format!("{}/{}.log", c.name, i.attempt),
        stdin: c.stdin.unwrap_or(false),
        stdin_once: c.stdin_once.unwrap_or(false),
        tty: c.tty.unwrap_or(false),
        linux: Some(LinuxContainerConfig {
            resources: Some(resources(
                c,
                podvisor_core::oom::oom_score_adj(i.pod, c, node.memory_capacity),
            )?),
            security_context: Some(container_security(i.pod, c, host_apparmor())?),
        }),
        ..Default::default()
    })
}
