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
