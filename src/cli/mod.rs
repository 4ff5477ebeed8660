//! Command-line interface: argument definitions and dispatch. Each subcommand lives in its
//! own module.

mod inspect;
mod runtime;
mod version;

use clap::{Args, Parser, Subcommand};
use podvisor_cri::DEFAULT_ENDPOINT;

#[derive(Debug, Parser)]
#[command(
    name = "podvisor",
    version,
    about = "A Kubernetes node agent built as supervised actors"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `podvisor_cri=debug`.
    #[arg(long, global = true, env = "PODVISOR_LOG", default_value = "warn")]
    pub log: String,
}

#[derive(Debug, Args)]
pub struct RuntimeArgs {
    /// CRI endpoint of the container runtime.
    #[arg(long, env = "PODVISOR_RUNTIME_ENDPOINT", default_value = DEFAULT_ENDPOINT)]
    pub runtime_endpoint: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print podvisor's version and the container runtime's name, version and API version.
    Version(RuntimeArgs),
    /// Talk to the container runtime directly.
    #[command(subcommand)]
    Runtime(runtime::RuntimeCommand),
    /// Look inside a running podvisor through its debug endpoint.
    #[command(subcommand)]
    Inspect(inspect::InspectCommand),
}

pub fn init_logging(global: &GlobalArgs) {
    let filter = tracing_subscriber::EnvFilter::try_new(&global.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Version(args) => version::run(&args).await,
        Command::Runtime(cmd) => runtime::run(cmd).await,
        Command::Inspect(cmd) => inspect::run(cmd).await,
    }
}

/// The runtime handle every CLI command uses: default timeouts, except that an interactive
/// command gives up after ten seconds instead of the agent's two minutes.
pub fn connect(args: &RuntimeArgs) -> anyhow::Result<podvisor_cri::CriRuntime> {
    let timeouts = podvisor_cri::Timeouts {
        call: std::time::Duration::from_secs(10),
        ..Default::default()
    };
    Ok(podvisor_cri::CriRuntime::new(
        &args.runtime_endpoint,
        timeouts,
    )?)
}
