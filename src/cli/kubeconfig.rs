//! `podvisor kubeconfig`: prints the kubeconfig the agent wrote at its first start
//! (`<state_dir>/kubeconfig`: its API's address, CA and token), for
//! `podvisor kubeconfig > ~/.kube/config` or `KUBECONFIG=...`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use crate::agent::AgentConfig;

#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// The agent's configuration, to find its state directory.
    #[arg(long, env = "PODVISOR_CONFIG")]
    pub config: Option<PathBuf>,
    /// The agent's state directory (overrides the config's `state_dir`).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

pub fn run(args: &KubeconfigArgs) -> anyhow::Result<()> {
    let state = match &args.state_dir {
        Some(d) => d.clone(),
        None => AgentConfig::load(args.config.as_deref())?.state_dir,
    };
    let path = state.join("kubeconfig");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} (has the agent started with this state directory, and are you its user?)", path.display()))?;
    print!("{text}");
    Ok(())
}
