//! How a pod is described to the runtime (the kubelet's `generatePodSandboxConfig` and
//! `generateContainerConfig`): its sandbox (`sandbox.rs`), each container instance
//! (`container.rs`), the paths podvisor keeps per pod (`paths.rs`), and the crash-loop
//! backoff, derived from the runtime's own records so it survives agent restarts
//! (`backoff.rs`).

mod backoff;
mod container;
mod dns;
mod hosts;
mod paths;
mod sandbox;
mod security;

use std::path::PathBuf;

use podvisor_core::quantity::QuantityError;
use podvisor_cri::proto::DnsConfig;

pub(crate) use backoff::{backoff_left, crash_backoff, next_attempt};
pub use container::{Instance, container_config};
pub(crate) use container::{MEMORY_REQUEST, memory_request, resources, sub_paths};
pub use dns::pod_dns;
pub(crate) use hosts::{etc_hosts_path, hosts_file};
pub(crate) use paths::{empty_dir_path, pod_state_dir, termination_log_path};
pub use paths::{pod_log_directory, read_dns};
pub use sandbox::sandbox_config;
pub(crate) use security::{check_explicit_user, check_image_user, must_check_image_user};

/// Node facts the configs need.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub node_name: String,
    /// Pod log directories live here (`<ns>_<name>_<uid>/<container>/<attempt>.log`).
    pub pod_log_dir: PathBuf,
    /// Per-pod state (`<uid>/volumes/...`).
    pub pod_dir: PathBuf,
    /// The host's resolver settings (pods with `dnsPolicy: Default`, and `ClusterFirst`
    /// without cluster DNS).
    pub dns: Option<DnsConfig>,
    /// The cluster's DNS servers (the kubelet's `clusterDNS`): `ClusterFirst` pods use them.
    pub cluster_dns: Vec<String>,
    /// The cluster's domain (`clusterDomain`, `cluster.local`), for search domains and
    /// hostnames.
    pub cluster_domain: String,
    /// The machine's memory, bytes: Burstable containers' `oom_score_adj` is relative to it.
    pub memory_capacity: i64,
    /// Where pods' cgroups go, under a parent per QoS class (`None`: where the runtime
    /// puts them).
    pub pod_cgroups: Option<crate::kuberuntime::pod_cgroups::PodCgroups>,
    /// Where each container's log gets a link named for its pod, namespace and container
    /// (`/var/log/containers`, what log shippers read; `None`: no links).
    pub container_links_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("volume {volume:?} mounted by container {container:?} is not declared")]
    MissingVolume { container: String, volume: String },
    #[error("volume {0:?}: podvisor cannot mount volumes of its kind")]
    UnsupportedVolume(String),
    /// Asked of the node or the image, and not true of them (AppArmor on a node without
    /// it, runAsNonRoot for an image that runs as root).
    #[error("{0}")]
    Unenforceable(String),
    #[error("container {container:?}: {error}")]
    Quantity {
        container: String,
        error: QuantityError,
    },
    /// The command and arguments, with the environment, more than a process can be given.
    #[error("container {container:?}: the command and its arguments {error}")]
    TooLong {
        container: String,
        error: podvisor_core::expand::TooLong,
    },
}

#[cfg(test)]
mod tests;
