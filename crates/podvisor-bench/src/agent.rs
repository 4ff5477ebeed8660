//! Launching the release `podvisor run` for a benchmark: its directories made, its
//! configuration written to `<dir>/podvisor.toml`, its output in `<dir>/agent.log`.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

/// Starts `bin run` in `dir` with `config` (TOML); the caller waits for it to be ready.
pub fn spawn(bin: &Path, dir: &Path, config: &str) -> anyhow::Result<Child> {
    for sub in ["manifests", "state", "logs"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    std::fs::write(dir.join("podvisor.toml"), config)?;
    let log = std::fs::File::create(dir.join("agent.log"))?;
    Command::new(bin)
        .args(["run", "--config"])
        .arg(dir.join("podvisor.toml"))
        .env_remove("PODVISOR_LOG")
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .with_context(|| format!("cannot run {}", bin.display()))
}

/// A free TCP port on loopback (for the agent's debug endpoint and API).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
