//! `podvisor run` (also `podvisor FLAGS...`, as a kubelet's unit starts it)

use std::path::PathBuf;

use clap::Args;

use super::GlobalArgs;
use super::kubelet_flags::KubeletFlags;
use crate::agent::{self, AgentConfig};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Agent configuration: podvisor's TOML (config/podvisor.toml documents every key) or
    /// the kubelet's KubeletConfiguration (YAML or JSON). Without it, the defaults.
    #[arg(long, env = "PODVISOR_CONFIG")]
    pub config: Option<PathBuf>,
    /// The container runtime's CRI endpoint (overrides `runtime_endpoint`).
    #[arg(long, alias = "container-runtime-endpoint")]
    pub runtime_endpoint: Option<String>,
    /// Directory of pod manifests (overrides `manifest_dir`).
    #[arg(long, alias = "pod-manifest-path")]
    pub manifests: Option<PathBuf>,
    /// State directory (overrides `state_dir`; the kubelet's `--root-dir`).
    #[arg(long, alias = "root-dir")]
    pub state_dir: Option<PathBuf>,
    /// Debug endpoint address (overrides `debug.address`).
    #[arg(long)]
    pub debug_address: Option<std::net::SocketAddr>,
    /// The node's Kubernetes API address (overrides `api.address`).
    #[arg(long)]
    pub api_address: Option<std::net::SocketAddr>,
    /// Node name (overrides `node_name`; the kubelet's `--hostname-override`).
    #[arg(long, alias = "hostname-override")]
    pub node_name: Option<String>,
    /// Join the cluster this kubeconfig names, a bootstrap one or the node's own
    /// (overrides `cluster.kubeconfig`).
    #[arg(long)]
    pub cluster_kubeconfig: Option<PathBuf>,
    /// The kubelet's flags, under its names.
    #[command(flatten)]
    pub kubelet: KubeletFlags,
}

impl RunArgs {
    /// The configuration: the file's (or the defaults), then the flags over it.
    pub fn config(self) -> anyhow::Result<AgentConfig> {
        let mut cfg = AgentConfig::load(self.config.as_deref())?;
        self.kubelet.apply(&mut cfg)?;
        if let Some(v) = self.runtime_endpoint {
            cfg.runtime_endpoint = v;
        }
        if let Some(v) = self.manifests {
            cfg.manifest_dir = absolute(v)?;
        }
        if let Some(v) = self.state_dir {
            cfg.state_dir = absolute(v)?;
        }
        if let Some(v) = self.debug_address {
            cfg.debug.address = v;
        }
        if let Some(v) = self.api_address {
            cfg.api.address = v;
        }
        if let Some(v) = self.node_name {
            cfg.node_name = v;
        }
        if let Some(v) = self.cluster_kubeconfig {
            cfg.cluster.kubeconfig = Some(absolute(v)?);
        }
        Ok(cfg)
    }
}

pub fn run(args: RunArgs, global: GlobalArgs) -> anyhow::Result<()> {
    let cfg = args.config()?;
    let filter = global.log.unwrap_or_else(|| cfg.log.filter.clone());
    super::init_logging(&filter, cfg.log.format == agent::config::LogFormat::Json);
    agent::run(cfg)
}

pub(super) fn absolute(p: PathBuf) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p
    } else {
        std::env::current_dir()?.join(p)
    })
}
