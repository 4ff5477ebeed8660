//! Nodes of a real cluster for `node-bench` and `forward-bench`: podvisor (`podvisor run` joining with the
//! bootstrap kubeconfig) or the real kubelet (built by `scripts/cluster-up`'s module), each
//! started in a directory of its own against the given containerd, one at a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context;
use k8s_openapi::api::core::v1::Node;
use podvisor_client::{Api, Client};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Podvisor,
    Kubelet,
}

impl NodeKind {
    pub fn label(self) -> &'static str {
        match self {
            NodeKind::Podvisor => "podvisor",
            NodeKind::Kubelet => "kubelet",
        }
    }
}

/// What every node of a run shares.
#[derive(Clone)]
pub struct NodeSetup {
    pub podvisor: PathBuf,
    pub kubelet: PathBuf,
    pub endpoint: String,
    pub bootstrap: PathBuf,
    pub ca: PathBuf,
    /// The kubelet refuses a loopback node IP: a host address.
    pub node_ip: String,
    /// How many pods each node admits (podvisor's `[allocatable] pods`, the kubelet's
    /// `maxPods`).
    pub max_pods: u32,
    /// podvisor logs in JSON what [`crate::hops`] reads, its CRI calls included (and, below
    /// warnings, nothing else).
    pub hops_log: bool,
}

/// Where the cluster and the kubelet are (the flags both cluster benchmarks take).
#[derive(clap::Args)]
pub struct NodeArgs {
    /// scripts/cluster-up's state directory.
    #[arg(long, default_value = "/var/lib/podvisor-cluster")]
    pub cluster: PathBuf,
    /// The kubelet binary (scripts/cluster-up builds it with the control plane's version).
    #[arg(
        long,
        default_value = "/var/lib/podvisor-tools/kubernetes/v1.37.2/bin/kubelet"
    )]
    pub kubelet: PathBuf,
    /// A host address for the kubelet (it refuses loopback); default: the first of
    /// `hostname -I`.
    #[arg(long)]
    pub node_ip: Option<String>,
    /// How many pods each node admits, both alike (the kubelet's default is 110).
    #[arg(long, default_value_t = 110)]
    pub max_pods: u32,
}

impl NodeArgs {
    pub fn setup(
        &self,
        agent: &crate::args::AgentArg,
        runtime: &crate::args::RuntimeArg,
    ) -> anyhow::Result<NodeSetup> {
        let pki = self.cluster.join("pki");
        Ok(NodeSetup {
            podvisor: agent.binary()?,
            kubelet: self.kubelet.clone(),
            endpoint: runtime.endpoint.clone(),
            bootstrap: pki.join("bootstrap.kubeconfig"),
            ca: pki.join("ca.crt"),
            node_ip: match &self.node_ip {
                Some(ip) => ip.clone(),
                None => host_ip()?,
            },
            max_pods: self.max_pods,
            hops_log: false,
        })
    }

    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.cluster.join("pki").join("admin.kubeconfig")
    }

    /// A client acting as the cluster's admin.
    pub async fn admin(&self) -> anyhow::Result<Client> {
        let remote =
            podvisor_cluster::RemoteClient::from_kubeconfig(&self.admin_kubeconfig()).await?;
        Ok(Client::new(remote))
    }
}

fn host_ip() -> anyhow::Result<String> {
    let out = Command::new("hostname").arg("-I").output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.split_whitespace()
        .find(|a| a.contains('.') && !a.starts_with("127.") && !a.starts_with("10.8"))
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("no host address in `hostname -I`; pass --node-ip"))
}

/// Waits (up to 120 s) until the Node `name` is Ready.
pub async fn node_ready(client: &Client, name: &str) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let ready = nodes.get_opt(name).await?.is_some_and(|n| {
            let c = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
        });
        if ready {
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "node {name} not Ready after 120 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

pub struct NodeProc {
    pub kind: NodeKind,
    pub name: String,
    pub dir: PathBuf,
    child: Child,
}

impl NodeProc {
    pub fn start(kind: NodeKind, setup: &NodeSetup) -> anyhow::Result<Self> {
        let name = format!("bench-{}-{}", kind.label(), std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::File::create(dir.join("node.log"))?;
        let mut cmd = match kind {
            NodeKind::Podvisor => podvisor(setup, &name, &dir)?,
            NodeKind::Kubelet => kubelet(setup, &name, &dir)?,
        };
        let child = cmd
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {}", kind.label()))?;
        Ok(Self {
            kind,
            name,
            dir,
            child,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, and wait (also when dropped).
    pub fn stop(self) {}
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        // The kubelet bind-mounts its root directory onto itself (and leaves it so).
        let root = self.dir.join("root");
        if self.kind == NodeKind::Kubelet && root.exists() {
            let _ = Command::new("umount").arg("-R").arg(&root).status();
        }
        // podvisor keeps the cluster's objects on a tmpfs that outlives it (for an outage).
        let keep = self.dir.join("state").join("cluster").join("objects");
        if self.kind == NodeKind::Podvisor && keep.exists() {
            let _ = Command::new("umount").arg(&keep).status();
        }
    }
}

fn podvisor(setup: &NodeSetup, name: &str, dir: &Path) -> anyhow::Result<Command> {
    let log = if setup.hops_log {
        format!(
            "filter = \"{},{}\"\nformat = \"json\"\n",
            crate::hops::FILTER,
            crate::hops::CRI_CALLS
        )
    } else {
        "filter = \"info\"\n".to_string()
    };
    let config = format!(
        "node_name = \"{name}\"\nruntime_endpoint = \"{}\"\nmanifest_dir = \"{d}/manifests\"\n\
         state_dir = \"{d}/state\"\npod_log_dir = \"{d}/logs\"\n[debug]\naddress = \"127.0.0.1:0\"\n\
         [api]\naddress = \"127.0.0.1:0\"\n[server]\naddress = \"0.0.0.0:0\"\n[log]\n{}[cluster]\nkubeconfig = \"{}\"\n\
         {}[allocatable]\npods = {}\n",
        setup.endpoint,
        log,
        setup.bootstrap.display(),
        crate::agent::DISK_DECIDES_NOTHING,
        setup.max_pods,
        d = dir.display(),
    );
    std::fs::write(dir.join("podvisor.toml"), config)?;
    let mut c = Command::new(&setup.podvisor);
    c.arg("run").arg("--config").arg(dir.join("podvisor.toml"));
    Ok(c)
}

fn kubelet(setup: &NodeSetup, name: &str, dir: &Path) -> anyhow::Result<Command> {
    // This machine has cgroup v1 and no systemd: the kubelet's QoS cgroups and its refusal
    // of cgroup v1 are turned off; eviction and image GC thresholds are off on both nodes
    // (podvisor's above), so how full the disk is decides nothing. Everything else is the
    // kubelet's default.
    let config = format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         authentication: {{anonymous: {{enabled: false}}, webhook: {{enabled: true}}, x509: {{clientCAFile: {}}}}}\n\
         authorization: {{mode: Webhook}}\ncgroupDriver: cgroupfs\nfailSwapOn: false\nfailCgroupV1: false\n\
         cgroupsPerQOS: false\nenforceNodeAllocatable: []\nreadOnlyPort: 0\n\
         evictionHard: {{nodefs.available: \"0%\", imagefs.available: \"0%\", memory.available: \"0%\"}}\n\
         imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n\
         containerRuntimeEndpoint: {e}\nimageServiceEndpoint: {e}\nmaxPods: {}\n",
        setup.ca.display(),
        setup.max_pods,
        e = setup.endpoint,
    );
    std::fs::write(dir.join("kubelet.yaml"), config)?;
    let mut c = Command::new(&setup.kubelet);
    c.arg("--config")
        .arg(dir.join("kubelet.yaml"))
        .arg("--root-dir")
        .arg(dir.join("root"))
        .arg("--cert-dir")
        .arg(dir.join("pki"))
        .arg("--bootstrap-kubeconfig")
        .arg(&setup.bootstrap)
        .arg("--kubeconfig")
        .arg(dir.join("kubelet.kubeconfig"))
        .args(["--hostname-override", name, "--node-ip", &setup.node_ip]);
    Ok(c)
}
