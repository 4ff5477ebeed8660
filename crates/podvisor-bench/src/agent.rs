//! Launching the release `podvisor run` for a benchmark: its directories made, its
//! configuration written to `<dir>/podvisor.toml`, its output in `<dir>/agent.log`.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

/// Eviction and image GC thresholds off, as on the kubelet beside it (`nodes`): how full
/// the host's disk is must decide nothing in a benchmark. With the kubelet's defaults
/// (imagefs.available 15 %), a CI host with a disk 86 % full tainted the agent's node with
/// disk pressure mid-run and its API refused the benchmark's pods.
pub const DISK_DECIDES_NOTHING: &str = "[eviction]\nhard = { \"nodefs.available\" = \"0%\", \"imagefs.available\" = \"0%\", \"memory.available\" = \"0%\" }\n[image_gc]\nhigh_threshold_percent = 100\nlow_threshold_percent = 99\n";

/// Starts `bin run` in `dir` with `config` (TOML, [`DISK_DECIDES_NOTHING`] added unless it
/// has an `[eviction]` of its own); the caller waits for it to be ready.
pub fn spawn(bin: &Path, dir: &Path, config: &str) -> anyhow::Result<Child> {
    for sub in ["manifests", "state", "logs"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let config = if config.contains("[eviction]") {
        config.to_string()
    } else {
        format!("{config}\n{DISK_DECIDES_NOTHING}")
    };
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

/// The debug endpoint (`http://127.0.0.1:PORT`) that an agent with a JSON log said it
/// serves once everything was bound (`podvisor running`, its latest start). Agents here
/// bind port 0 and are asked where they listen: a port found free and handed to the agent
/// can be taken before the agent binds it (a busy control plane's connections draw from
/// the same range), and the agent then exits.
pub fn logged_endpoint(log: &Path) -> Option<String> {
    // (The line is the agent's `podvisor::agent` target at info: `SAYS_WHERE` keeps it in
    // a log filtered to warnings.)
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "podvisor running")
        .and_then(|v| v["fields"]["endpoint"].as_str().map(str::to_string))
}

/// A tracing directive to add to an agent's log filter so [`logged_endpoint`] finds its
/// line (the agent's own start-up lines, a handful).
pub const SAYS_WHERE: &str = "podvisor::agent=info";

/// A release `podvisor run` of a benchmark's own (node name, directories, ports), killed
/// when dropped; its pods are left for [`BenchAgent::clear`].
pub struct BenchAgent {
    pub child: Child,
    pub node: String,
    pub dir: std::path::PathBuf,
    /// The debug endpoint, once the agent said where it serves it.
    debug: std::sync::OnceLock<String>,
}

impl BenchAgent {
    /// Starts an agent named `node` under `<tmp>/<bench>/<node>` against `runtime`, with
    /// `extra` (TOML sections) after its base configuration. Its log (`agent.log`, JSON)
    /// holds what `log` (a tracing filter) asks for.
    pub fn start(
        bin: &Path,
        bench: &str,
        node: &str,
        runtime: &str,
        extra: &str,
        log: &str,
    ) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(bench).join(node);
        let _ = std::fs::remove_dir_all(&dir);
        let config = format!(
            "node_name = \"{node}\"\nruntime_endpoint = \"{runtime}\"\nmanifest_dir = \"{d}/manifests\"\nstate_dir = \"{d}/state\"\npod_log_dir = \"{d}/logs\"\n[debug]\naddress = \"127.0.0.1:0\"\n[api]\naddress = \"127.0.0.1:0\"\n[server]\naddress = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\nfilter = \"{log},{SAYS_WHERE}\"\n{extra}",
            d = dir.display(),
        );
        let child = spawn(bin, &dir, &config)?;
        Ok(Self {
            child,
            node: node.to_string(),
            dir,
            debug: std::sync::OnceLock::new(),
        })
    }

    /// The debug endpoint (`http://127.0.0.1:PORT`), as the agent logged it.
    pub fn debug(&self) -> anyhow::Result<&str> {
        if self.debug.get().is_none() {
            let logged = logged_endpoint(&self.dir.join("agent.log"))
                .ok_or_else(|| anyhow::anyhow!("agent {} not serving yet", self.node))?;
            let _ = self.debug.set(logged);
        }
        Ok(self.debug.get().map(String::as_str).unwrap_or_default())
    }

    /// The agent's Kubernetes API, once it answers and its debug endpoint is known (within
    /// 30 s).
    pub async fn api(&self) -> anyhow::Result<podvisor_debug::client::Endpoint> {
        let kubeconfig = self.dir.join("state/kubeconfig");
        let t0 = std::time::Instant::now();
        loop {
            if let Ok(api) = podvisor_debug::client::Endpoint::from_kubeconfig(&kubeconfig)
                && self.debug().is_ok()
                && api.get("/api/v1/namespaces/default/pods").await.is_ok()
            {
                return Ok(api);
            }
            if t0.elapsed() > std::time::Duration::from_secs(30) {
                anyhow::bail!(
                    "agent {} not serving its API within 30 s; the end of {}:\n{}",
                    self.node,
                    self.dir.join("agent.log").display(),
                    self.log_tail(40)
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// The last `lines` lines of the agent's log, for an error that says why it failed.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join("agent.log")).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Writes manifest `<name>.yaml` (to a hidden name, then renamed: never read half).
    pub fn write(&self, name: &str, yaml: &str) -> anyhow::Result<()> {
        let m = self.dir.join("manifests");
        let tmp = m.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, yaml)?;
        std::fs::rename(&tmp, m.join(format!("{name}.yaml")))?;
        Ok(())
    }

    /// An actor's summary from the debug endpoint.
    pub async fn actor_state(&self, id: &str) -> anyhow::Result<serde_json::Value> {
        let body = podvisor_debug::client::get(self.debug()?, &format!("/debug/actors/{id}"), None)
            .await?;
        let v: serde_json::Value = serde_json::from_str(&body)?;
        Ok(v["state"].clone())
    }

    /// Removes every manifest and waits until the runtime holds nothing of this node.
    pub async fn clear(&self, rt: &podvisor_cri::CriRuntime) -> anyhow::Result<()> {
        use podvisor_cri::Runtime;
        for e in std::fs::read_dir(self.dir.join("manifests"))? {
            std::fs::remove_file(e?.path())?;
        }
        let t0 = std::time::Instant::now();
        while rt
            .list_pods()
            .await?
            .iter()
            .any(|p| podvisor_cri::labels::owned_by(p, &self.node))
        {
            if t0.elapsed() > std::time::Duration::from_secs(180) {
                anyhow::bail!(
                    "{}: pods still in the runtime 180 s after removal",
                    self.node
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        Ok(())
    }
}

impl Drop for BenchAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
