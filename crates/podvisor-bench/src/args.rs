//! Arguments the benchmark programs share.

// The containerd a benchmark measures (`scripts/containerd-up`'s by default). A plain
// comment: clap would take a doc comment here as the about text of every program.
#[derive(Debug, Clone, clap::Args)]
pub struct RuntimeArg {
    /// CRI endpoint of the containerd to measure.
    #[arg(
        long,
        default_value = "unix:///var/lib/podvisor-containerd/containerd.sock"
    )]
    pub endpoint: String,
}

// The agent binary a benchmark runs (a plain comment, as above).
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArg {
    /// The podvisor binary (default: next to this benchmark, i.e. the same profile).
    #[arg(long)]
    pub podvisor: Option<std::path::PathBuf>,
}

impl AgentArg {
    /// The binary to run; an error that says how to build it when it is not there.
    pub fn binary(&self) -> anyhow::Result<std::path::PathBuf> {
        let bin = match &self.podvisor {
            Some(p) => p.clone(),
            None => std::env::current_exe()?.with_file_name("podvisor"),
        };
        anyhow::ensure!(
            bin.exists(),
            "{} not found: cargo build --release --bin podvisor first",
            bin.display()
        );
        Ok(bin)
    }
}

/// The pid of the containerd serving `endpoint`: from `pid_file` when given, else from the
/// `containerd.pid` that `scripts/containerd-up` writes beside the socket, so a benchmark
/// pointed at another containerd never reads the default one's pid.
pub fn containerd_pid(endpoint: &str, pid_file: Option<&std::path::Path>) -> anyhow::Result<u32> {
    use anyhow::Context;
    let path = match pid_file {
        Some(p) => p.to_path_buf(),
        None => std::path::Path::new(endpoint.trim_start_matches("unix://"))
            .with_file_name("containerd.pid"),
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("containerd's pid file {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("containerd's pid file {}", path.display()))
}
