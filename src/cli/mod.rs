//! Command-line interface: argument definitions and dispatch. Each subcommand lives in its
//! own module.

mod completions;
mod inspect;
mod kubeconfig;
mod kubelet_flags;
mod pods;
pub mod run;
mod runtime;
mod top;
mod version;

use clap::{Args, Parser, Subcommand};
pub use kubelet_flags::default_to_run;
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
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `podvisor_kubelet=debug`.
    /// Defaults to `warn` for client commands and the config's `log.filter` for `run`.
    #[arg(long, global = true, env = "PODVISOR_LOG")]
    pub log: Option<String>,
}

#[derive(Debug, Args)]
pub struct RuntimeArgs {
    /// CRI endpoint of the container runtime.
    #[arg(long, env = "PODVISOR_RUNTIME_ENDPOINT", default_value = DEFAULT_ENDPOINT)]
    pub runtime_endpoint: String,
}

/// Where a client command finds the agent.
#[derive(Debug, Args)]
pub struct EndpointArgs {
    /// The agent's debug endpoint and API.
    #[arg(
        long,
        env = "PODVISOR_ENDPOINT",
        default_value = "http://127.0.0.1:9740"
    )]
    pub endpoint: String,
    /// Bearer token. Without it, the agent's own from `<state_dir>/pki/token` (state_dir
    /// from `$PODVISOR_CONFIG`, else the default), readable by the agent's user only.
    #[arg(long, env = "PODVISOR_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl EndpointArgs {
    /// The token to send: the one given, else the agent's, if this user can read it.
    pub fn token(&self) -> Option<String> {
        self.token.clone().or_else(|| {
            let config = std::env::var_os("PODVISOR_CONFIG").map(std::path::PathBuf::from);
            let state = crate::agent::AgentConfig::load(config.as_deref())
                .ok()?
                .state_dir;
            let t = std::fs::read_to_string(state.join("pki").join("token")).ok()?;
            Some(t.trim().to_string())
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the node agent: the pods of a manifest directory, in containerd.
    Run(Box<run::RunArgs>),
    /// List pods (a thin client of the agent's Kubernetes API; kubectl works as well).
    #[command(subcommand)]
    Get(pods::GetCommand),
    /// Show a pod in detail: status, containers, recent events.
    #[command(subcommand)]
    Describe(pods::DescribeCommand),
    /// Print a container's log.
    Logs(pods::LogsArgs),
    /// Print podvisor's version and the container runtime's name, version and API version.
    Version(RuntimeArgs),
    /// Talk to the container runtime directly.
    #[command(subcommand)]
    Runtime(runtime::RuntimeCommand),
    /// Look inside a running podvisor through its debug endpoint.
    #[command(subcommand)]
    Inspect(inspect::InspectCommand),
    /// Print the kubeconfig for the agent's Kubernetes API (kubectl manages the node).
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// CPU and memory of pods or the node (what `kubectl top` shows).
    #[command(subcommand)]
    Top(top::TopCommand),
    /// Print a shell's completion script (`podvisor completions bash > ...`).
    Completions(completions::CompletionsArgs),
}

pub fn init_logging(filter: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only help a person at a terminal; in a log file they are noise.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

pub async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run(_) => unreachable!("run has its own runtime"),
        Command::Get(cmd) => pods::get(cmd).await,
        Command::Describe(cmd) => pods::describe(cmd).await,
        Command::Logs(args) => pods::logs(args).await,
        Command::Version(args) => version::run(&args).await,
        Command::Runtime(cmd) => runtime::run(cmd).await,
        Command::Inspect(cmd) => inspect::run(cmd).await,
        Command::Kubeconfig(args) => kubeconfig::run(&args),
        Command::Top(cmd) => top::run(cmd).await,
        Command::Completions(args) => {
            completions::print(&args);
            Ok(())
        }
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
