//! The agent's configuration: a TOML file (`config/podvisor.toml` documents every key and
//! its default) or the kubelet's own `KubeletConfiguration` (`kubelet.rs`), plus flags
//! (podvisor's and the kubelet's names for them). Unknown keys and bad values are refused
//! with the key and the reason.

mod configz;
mod duration;
mod eviction;
mod kubelet;
mod kubelet_fields;
mod kubelet_nested;
mod node_labels;
mod sections;
mod serving;
mod validate;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use configz::configz;
use duration::duration;
pub use eviction::{Eviction, ImageGc};
pub use kubelet::from_kubelet_configuration;
pub use kubelet_nested::verbosity_filter;
pub use node_labels::parse_flag as parse_node_labels;
pub use sections::{
    Allocatable, Api, CgroupDriver, Cluster, Debug, Log, LogFormat, Logs, NodeSection, Pleg,
    Probes, RuntimeSection, Supervisor,
};
pub use serving::{Healthz, Server, Streaming};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The node's name; empty means the host name.
    pub node_name: String,
    pub runtime_endpoint: String,
    pub manifest_dir: PathBuf,
    pub state_dir: PathBuf,
    pub pod_log_dir: PathBuf,
    #[serde(deserialize_with = "duration")]
    pub relist_period: Duration,
    #[serde(deserialize_with = "duration")]
    pub resync_interval: Duration,
    #[serde(deserialize_with = "duration")]
    pub sync_backoff: Duration,
    #[serde(deserialize_with = "duration")]
    pub manifest_rescan_period: Duration,
    #[serde(deserialize_with = "duration")]
    pub housekeeping_period: Duration,
    pub runtime: RuntimeSection,
    pub allocatable: Allocatable,
    pub node: NodeSection,
    pub pleg: Pleg,
    pub probes: Probes,
    pub logs: Logs,
    pub supervisor: Supervisor,
    pub debug: Debug,
    pub api: Api,
    pub server: Server,
    pub streaming: Streaming,
    pub healthz: Healthz,
    pub cluster: Cluster,
    pub log: Log,
    pub eviction: Eviction,
    pub image_gc: ImageGc,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            node_name: String::new(),
            runtime_endpoint: podvisor_cri::DEFAULT_ENDPOINT.into(),
            manifest_dir: "/etc/podvisor/manifests".into(),
            state_dir: "/var/lib/podvisor".into(),
            pod_log_dir: "/var/log/pods".into(),
            relist_period: Duration::from_secs(1),
            resync_interval: Duration::from_secs(60),
            sync_backoff: Duration::from_secs(10),
            manifest_rescan_period: Duration::from_secs(20),
            housekeeping_period: Duration::from_secs(2),
            runtime: RuntimeSection::default(),
            allocatable: Allocatable::default(),
            node: NodeSection::default(),
            pleg: Pleg::default(),
            probes: Probes::default(),
            logs: Logs::default(),
            supervisor: Supervisor::default(),
            debug: Debug::default(),
            api: Api::default(),
            server: Server::default(),
            streaming: Streaming::default(),
            healthz: Healthz::default(),
            cluster: Cluster::default(),
            log: Log::default(),
            eviction: Eviction::default(),
            image_gc: ImageGc::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {path}: {source}")]
    Invalid {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("invalid setting {key}: {message}")]
    Value { key: &'static str, message: String },
    #[error("KubeletConfiguration field {field}: {message}")]
    Kubelet { field: String, message: String },
    #[error("in {path}: {source}")]
    InFile {
        path: PathBuf,
        source: Box<ConfigError>,
    },
}

impl AgentConfig {
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if kubelet::is_kubelet_configuration(&text) {
            return from_kubelet_configuration(&text).map_err(|e| ConfigError::InFile {
                path: path.to_path_buf(),
                source: Box::new(e),
            });
        }
        Self::parse(&text).map_err(|source| ConfigError::Invalid {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
    }

    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    pub fn node_name(&self) -> String {
        if !self.node_name.is_empty() {
            return self.node_name.clone();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_lowercase())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    }
}

#[cfg(test)]
mod tests;
