//! A real `podvisor run` for integration tests: its own manifest, state and log
//! directories, its own node name (so its housekeeping never touches another test's pods)
//! and its own port, against the test containerd.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::pod::MIRROR_ANNOTATION;
use podvisor_cri::{CriRuntime, Runtime};
use podvisor_debug::client::Endpoint;

pub struct Agent {
    pub node: String,
    pub dir: PathBuf,
    pub endpoint: String,
    config: PathBuf,
    /// How it is started: `run --config <config>`, or these arguments (kubelet-style).
    args: Vec<String>,
    child: Option<Child>,
}

/// Two distinct free ports on loopback (debug endpoint, API). Both listeners are held until
/// both are known: a port released at once can be handed out again by the next bind (CI
/// once gave the debug endpoint and the API one port, and the agent could not start).
/// They are chosen below the kernel's ephemeral range (32768 and up): whatever binds port
/// 0 meanwhile (another agent's kubelet server, a kubectl port-forward) is given one from
/// that range, so it cannot take a picked port before this agent binds it (it once did).
fn free_ports() -> (u16, u16) {
    let (a, b) = (below_ephemeral(), below_ephemeral());
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// A listener on a random free port in 20000–31999.
pub fn below_ephemeral() -> TcpListener {
    use std::hash::BuildHasher;
    for _ in 0..1000 {
        let n = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        let port = 20_000 + u16::try_from(n % 12_000).unwrap();
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            return l;
        }
    }
    TcpListener::bind("127.0.0.1:0").unwrap()
}

/// The node-pressure settings every test agent runs with unless its test gives its own:
/// eviction on, with absolute disk thresholds (the kubelet's percentages would evict on a
/// CI machine whose disk is merely well used, and refuse every test's pods), and image GC
/// off (the shared containerd's images are every test's).
fn with_test_pressure(extra: &str) -> String {
    let mut out = extra.to_string();
    if !extra.contains("[eviction]") {
        out += "\n[eviction]\nhard = { \"memory.available\" = \"100Mi\", \"nodefs.available\" = \"512Mi\", \"imagefs.available\" = \"512Mi\" }\n";
    }
    if !extra.contains("[image_gc]") {
        out += "\n[image_gc]\nhigh_threshold_percent = 100\n";
    }
    out
}

impl Agent {
    /// Starts an agent named `node` (lowercase, unique per test) and waits until it is ready.
    pub async fn start(node: &str) -> Self {
        Self::start_with(node, "").await
    }

    /// As `start`, with `extra` appended to its configuration (TOML sections).
    pub async fn start_with(node: &str, extra: &str) -> Self {
        Self::start_configured(node, "", extra).await
    }

    /// As `start_with`, with `top` (top-level keys) put before every section.
    pub async fn start_configured(node: &str, top: &str, extra: &str) -> Self {
        Self::start_on(node, &super::endpoint(), top, extra).await
    }

    /// As `start_configured`, talking to the runtime at `runtime` (a fault-injecting
    /// proxy in front of the test containerd, say).
    pub async fn start_on(node: &str, runtime: &str, top: &str, extra: &str) -> Self {
        Self::start_full(node, runtime, (top, extra), "127.0.0.1").await
    }

    /// Started as a kubelet's unit starts one: flags only, no subcommand. `args` makes them
    /// from the agent's directory (`manifests`, `state`, `logs`, `out` in it) and node
    /// name; the debug endpoint's and the API's addresses are added.
    pub async fn start_flags(
        node: &str,
        args: impl FnOnce(&std::path::Path, &str) -> Vec<String>,
    ) -> Self {
        super::runtime().await;
        let (node, dir) = Self::fresh_dir(node);
        let args = args(&dir, &node);
        let mut agent = Self {
            node,
            config: dir.join("unused.toml"),
            dir,
            endpoint: String::new(),
            args: Vec::new(),
            child: None,
        };
        agent
            .launch_on_free_ports(|agent, (debug_port, api_port)| {
                agent.args = args.clone();
                agent
                    .args
                    .push(format!("--debug-address=127.0.0.1:{debug_port}"));
                agent
                    .args
                    .push(format!("--api-address=127.0.0.1:{api_port}"));
            })
            .await;
        agent
    }

    /// Launches the agent on two free ports (`set` puts them in its configuration),
    /// trying others when one was taken between being found free and the agent's bind
    /// (other tests' agents pick theirs from the same range).
    async fn launch_on_free_ports(&mut self, mut set: impl FnMut(&mut Self, (u16, u16))) {
        for _ in 0..5 {
            let (debug_port, api_port) = free_ports();
            self.endpoint = format!("http://127.0.0.1:{debug_port}");
            set(self, (debug_port, api_port));
            if self.launch().await {
                return;
            }
        }
        panic!("five pairs of ports were taken before the agent could bind them");
    }

    /// The node's unique name and its fresh directory.
    fn fresh_dir(node: &str) -> (String, PathBuf) {
        let node = format!("{node}-{}", std::process::id());
        let dir = std::env::temp_dir().join("podvisor-it").join(&node);
        let _ = podvisor_kubelet::kuberuntime::subpath::remove_tree(&dir);
        for sub in ["manifests", "state", "logs", "out"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        (node, dir)
    }

    /// As `start_with`, the API listening on every address (pods reach it at the node's).
    pub async fn start_reachable(node: &str, extra: &str) -> Self {
        Self::start_full(node, &super::endpoint(), ("", extra), "0.0.0.0").await
    }

    async fn start_full(
        node: &str,
        runtime: &str,
        (top, extra): (&str, &str),
        api_host: &str,
    ) -> Self {
        // The chaos tests crash live actors through the debug endpoint, which builds with
        // the fault-injection feature (scripts/test builds with --all-features) serve.
        const FAULTS: &str = if cfg!(feature = "fault-injection") {
            "fault_injection = true\n"
        } else {
            ""
        };
        super::runtime().await; // fails with instructions if containerd is not up
        let (node, dir) = Self::fresh_dir(node);
        let config = dir.join("podvisor.toml");
        let extra = with_test_pressure(extra);
        let text = |debug_port: u16, api_port: u16| {
            format!(
                "{top}node_name = \"{node}\"\nruntime_endpoint = \"{}\"\nmanifest_dir = \"{}\"\nstate_dir = \"{}\"\npod_log_dir = \"{}\"\n[debug]\naddress = \"127.0.0.1:{debug_port}\"\n{FAULTS}[api]\naddress = \"{api_host}:{api_port}\"\n[server]\naddress = \"0.0.0.0:0\"\n[log]\nfilter = \"info,podvisor_kubelet=debug\"\n{extra}",
                runtime,
                dir.join("manifests").display(),
                dir.join("state").display(),
                dir.join("logs").display(),
            )
        };
        let mut agent = Self {
            node: node.clone(),
            dir: dir.clone(),
            endpoint: String::new(),
            config: config.clone(),
            args: Vec::new(),
            child: None,
        };
        agent
            .launch_on_free_ports(|_, (debug_port, api_port)| {
                std::fs::write(&config, text(debug_port, api_port)).unwrap();
            })
            .await;
        agent
    }

    /// Starts the agent and waits until it is ready; false if it exited because an
    /// address it was given was taken, panics on any other failure.
    async fn launch(&mut self) -> bool {
        let log_path = self.dir.join("agent.log");
        let from = std::fs::metadata(&log_path).map_or(0, |m| m.len() as usize);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_podvisor"));
        match self.args.is_empty() {
            true => command.args(["run", "--config"]).arg(&self.config),
            false => command.args(&self.args),
        };
        let child = command
            .env_remove("PODVISOR_LOG")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while podvisor_debug::client::get(&self.endpoint, "/readyz", None)
            .await
            .is_err()
        {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok()?) {
                let log = std::fs::read(&log_path).unwrap_or_default();
                let this_run = String::from_utf8_lossy(log.get(from..).unwrap_or_default());
                if this_run.contains("Address already in use") {
                    self.child = None;
                    return false;
                }
                panic!(
                    "the agent exited ({status}) before it was ready; its log:\n{}",
                    self.log_tail(20)
                );
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "the agent was not ready after 20 s; its log:\n{}",
                    self.log_tail(20)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// SIGKILL: the agent dies at once, pods keep running.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait: the agent stops cleanly, pods keep running. Returns its exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut c = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        c.wait().ok()?.code()
    }

    /// The agent's resident memory (VmRSS), in KiB.
    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the agent runs").id()
    }

    pub fn rss_kib(&self) -> u64 {
        let pid = self.child.as_ref().expect("the agent runs").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Every actor's mailbox with something queued: `(id, queued)`.
    pub async fn busy_mailboxes(&self) -> Vec<(String, u64)> {
        let body = podvisor_debug::client::get(&self.endpoint, "/debug/actors?limit=5000", None)
            .await
            .expect("the actor list");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["actors"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| {
                let queued = a["mailbox"]["queued"].as_u64()?;
                (queued > 0).then(|| (a["id"].as_str().unwrap_or("").to_string(), queued))
            })
            .collect()
    }

    /// Whether the agent process is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Starts it again on the same addresses (its clients know them).
    pub async fn restart(&mut self) {
        assert!(self.launch().await, "the agent's addresses were taken");
    }

    pub fn manifest(&self, name: &str) -> PathBuf {
        self.dir.join("manifests").join(name)
    }

    pub fn write(&self, name: &str, yaml: &str) {
        // Write then rename, as an editor or a config tool would: the agent never reads a
        // half-written file.
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, yaml).unwrap();
        std::fs::rename(&tmp, self.manifest(name)).unwrap();
    }

    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.manifest(name)).unwrap();
    }

    /// A directory the test's containers can write into (a hostPath).
    /// The agent's state directory (the pods' directories are in `pods/`).
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    pub fn out_dir(&self) -> PathBuf {
        self.dir.join("out")
    }

    /// The pod name the agent gives manifest pod `name`.
    pub fn name(&self, name: &str) -> String {
        format!("{name}-{}", self.node)
    }

    /// The agent's Kubernetes API, through the kubeconfig it wrote.
    pub fn api(&self) -> Endpoint {
        Endpoint::from_kubeconfig(&self.dir.join("state").join("kubeconfig"))
            .expect("the agent wrote its kubeconfig")
    }

    /// Every pod of the default namespace, as the API serves them (static pods as their
    /// mirrors).
    pub async fn pods(&self) -> Vec<Pod> {
        let body = self
            .api()
            .get("/api/v1/namespaces/default/pods")
            .await
            .expect("pod list");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        serde_json::from_value(v["items"].clone()).unwrap()
    }

    pub async fn pod(&self, name: &str) -> Option<Pod> {
        let full = self.name(name);
        self.pods()
            .await
            .into_iter()
            .find(|p| p.metadata.name.as_deref() == Some(full.as_str()))
    }

    /// The UID the agent runs static pod `name` under (its mirror names it).
    pub async fn static_uid(&self, name: &str) -> Option<String> {
        let mirror = self.pod(name).await?;
        mirror.metadata.annotations?.get(MIRROR_ANNOTATION).cloned()
    }

    /// Waits up to `limit` for pod `name` to satisfy `check`: the pod, or `None` if it
    /// never did (the caller says what it knows of why).
    pub async fn wait_pod_or(
        &self,
        name: &str,
        limit: Duration,
        check: impl Fn(&Pod) -> bool,
    ) -> Option<Pod> {
        let t0 = Instant::now();
        while t0.elapsed() <= limit {
            if let Some(p) = self.pod(name).await.filter(|p| check(p)) {
                return Some(p);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Waits until pod `name` satisfies `check`, returning it.
    pub async fn wait_pod(
        &self,
        name: &str,
        what: &str,
        limit: Duration,
        check: impl Fn(&Pod) -> bool,
    ) -> Pod {
        let t0 = Instant::now();
        loop {
            if let Some(p) = self.pod(name).await.filter(|p| check(p)) {
                return p;
            }
            if t0.elapsed() > limit {
                panic!(
                    "timed out after {limit:?} waiting for {name}: {what}\nlast seen: {:#?}\nagent log tail:\n{}",
                    self.pod(name).await.and_then(|p| p.status),
                    self.log_tail(40)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn logs(&self, name: &str, container: &str) -> String {
        self.api()
            .get(&format!(
                "/api/v1/namespaces/default/pods/{}/log?container={container}",
                self.name(name)
            ))
            .await
            .unwrap_or_default()
    }

    /// The agent's API token (what the debug endpoint's manifest errors require).
    pub fn token(&self) -> String {
        std::fs::read_to_string(self.dir.join("state").join("pki").join("token"))
            .expect("the agent wrote its token")
            .trim()
            .to_string()
    }

    /// An actor's summary, as the debug endpoint serves it (`null` if it has none yet).
    pub async fn actor_state(&self, id: &str) -> serde_json::Value {
        let body =
            podvisor_debug::client::get(&self.endpoint, &format!("/debug/actors/{id}"), None)
                .await
                .expect("the actor's entry");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["state"].clone()
    }

    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join("agent.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    pub fn agent_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("agent.log")).unwrap_or_default()
    }

    /// This agent's pods as the runtime holds them.
    pub async fn runtime_pods(&self) -> Vec<podvisor_cri::Pod> {
        let rt = super::runtime().await;
        rt.list_pods()
            .await
            .unwrap()
            .into_iter()
            .filter(|p| podvisor_cri::labels::owned_by(p, &self.node))
            .collect()
    }
}

/// Removes every sandbox and container the agent of `node` owns, listing again until
/// none is left: a call the killed agent had in flight (a create, a stop) may still be
/// running in the runtime, and what it makes or keeps shows up in a later listing.
/// Returns the UIDs of the pods removed.
pub async fn remove_owned(rt: &CriRuntime, node: &str) -> BTreeSet<String> {
    let mut uids = BTreeSet::new();
    for _ in 0..20 {
        let pods = rt.list_pods().await.unwrap_or_default();
        let owned: Vec<_> = pods
            .iter()
            .filter(|p| podvisor_cri::labels::owned_by(p, node))
            .collect();
        if owned.is_empty() {
            break;
        }
        for p in owned {
            super::remove_pod(rt, &p.pod.uid).await;
            uids.insert(p.pod.uid.clone());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    uids
}

/// Removes the cgroups a killed agent made for pods `uids` (the cgroupfs layout, every
/// QoS class, every hierarchy), with what the runtime left empty beneath them: no agent
/// comes after the last test to sweep them. A cgroup still holding a process stays.
fn remove_pod_cgroups(uids: &BTreeSet<String>) {
    fn remove_tree(dir: &Path) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)?.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path())?;
            }
        }
        std::fs::remove_dir(dir)
    }
    let fs = Path::new("/sys/fs/cgroup");
    let Ok(entries) = std::fs::read_dir(fs) else {
        return;
    };
    let roots: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .chain([fs.into()])
        .collect();
    for root in roots.iter().filter(|r| r.is_dir()) {
        for class in ["kubepods", "kubepods/burstable", "kubepods/besteffort"] {
            for uid in uids {
                let _ = remove_tree(&root.join(class).join(format!("pod{uid}")));
            }
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill9();
        let node = self.node.clone();
        // The pods it knew, some perhaps with a cgroup and no sandbox yet.
        let known = std::fs::read_dir(self.state_dir().join("pods"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned());
        let mut uids: BTreeSet<String> = known.collect();
        // The test's runtime is single-threaded and may be gone: clean up on a thread of
        // our own.
        let removed = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let cri = super::runtime().await;
                remove_owned(&cri, &node).await
            })
        })
        .join();
        uids.extend(removed.unwrap_or_default());
        remove_pod_cgroups(&uids);
        // The pods' subPath binds go with their containers, kept files or not.
        let _ = podvisor_kubelet::kuberuntime::subpath::unmount_beneath(&self.dir);
        if std::env::var_os("PODVISOR_KEEP_TEST_DIRS").is_none() && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
