//! `podvisor run`

use std::path::PathBuf;

use clap::Args;

use super::GlobalArgs;
use crate::agent::{self, AgentConfig};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Agent configuration (TOML; config/podvisor.toml documents every key). Without it,
    /// the documented defaults.
    #[arg(long, env = "PODVISOR_CONFIG")]
    pub config: Option<PathBuf>,
    /// The container runtime's CRI endpoint (overrides `runtime_endpoint`).
    #[arg(long)]
    pub runtime_endpoint: Option<String>,
    /// Directory of pod manifests (overrides `manifest_dir`).
    #[arg(long)]
    pub manifests: Option<PathBuf>,
    /// State directory (overrides `state_dir`).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Debug endpoint address (overrides `debug.address`).
    #[arg(long)]
    pub debug_address: Option<std::net::SocketAddr>,
    /// Node name (overrides `node_name`).
    #[arg(long)]
    pub node_name: Option<String>,
    /// Join the cluster this kubeconfig names, a bootstrap one or the node's own
    /// (overrides `cluster.kubeconfig`).
    #[arg(long)]
    pub cluster_kubeconfig: Option<PathBuf>,
}

pub fn run(args: RunArgs, global: GlobalArgs) -> anyhow::Result<()> {
    let mut cfg = AgentConfig::load(args.config.as_deref())?;
    if let Some(v) = args.runtime_endpoint {
        cfg.runtime_endpoint = v;
    }
    if let Some(v) = args.manifests {
        cfg.manifest_dir = absolute(v)?;
    }
    if let Some(v) = args.state_dir {
        cfg.state_dir = absolute(v)?;
    }
    if let Some(v) = args.debug_address {
        cfg.debug.address = v;
    }
    if let Some(v) = args.node_name {
        cfg.node_name = v;
    }
    if let Some(v) = args.cluster_kubeconfig {
        cfg.cluster.kubeconfig = Some(absolute(v)?);
    }
    let filter = global.log.unwrap_or_else(|| cfg.log.filter.clone());
    super::init_logging(&filter, cfg.log.format == agent::config::LogFormat::Json);
    agent::run(cfg)
}

fn absolute(p: PathBuf) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p
    } else {
        std::env::current_dir()?.join(p)
    })
}
