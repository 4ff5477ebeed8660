//! The configuration's sections (`[pleg]`, `[probes]`, `[logs]`, ...), each with the
//! libraries' own defaults, so the documented file and the code cannot drift apart.

use std::net::SocketAddr;
use std::time::Duration;

use podvisor_actors::supervisor::{Backoff, Intensity};
use podvisor_apiserver::pod_security::Level;
use podvisor_kubelet::pleg::{PlegConfig, PlegMode};
use serde::Deserialize;

use super::duration::{duration, optional_duration};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pleg {
    /// `evented` (also `auto`) consumes the runtime's container events where the runtime
    /// streams them and relists where it cannot (containerd 1.6 cannot); `relist` never
    /// asks for the stream.
    pub mode: PlegMode,
    /// Failed attempts at the event stream in a row before falling back to relisting.
    pub stream_retries: u32,
    /// The relist that runs beside the event stream (the normal relist period while the
    /// stream is seen losing events).
    #[serde(deserialize_with = "duration")]
    pub safety_relist: Duration,
    /// How long one pod's inspection may hold up the PLEG before that pod is inspected
    /// aside (a pod that hangs the runtime must not hold up every other pod's status).
    #[serde(deserialize_with = "duration")]
    pub inspect_timeout: Duration,
    /// Whether an event's own statuses (containerd sends the sandbox's and its containers')
    /// settle it when they are the pod's whole status; `false` inspects after every event.
    pub event_snapshots: bool,
}

/// `[probes]`: how many probes run at once (the rest wait their turn, and show as late in
/// the debug endpoint's `prober` actor).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Probes {
    pub max_in_flight: usize,
    /// Of those, exec probes: each is a process the runtime starts in a container.
    pub max_exec_in_flight: usize,
}

impl Default for Probes {
    fn default() -> Self {
        let d = podvisor_kubelet::prober::DEFAULT_LIMITS;
        Self {
            max_in_flight: d.total,
            max_exec_in_flight: d.exec,
        }
    }
}

/// `[logs]`: containers' log rotation (the kubelet's `containerLogMaxSize`,
/// `containerLogMaxFiles` and `containerLogMonitorInterval`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Logs {
    /// A quantity, like "10Mi".
    pub max_size: String,
    pub max_files: usize,
    #[serde(deserialize_with = "duration")]
    pub monitor_interval: Duration,
    /// Where each container's log gets a link named `<pod>_<namespace>_<container>-<id>.log`
    /// (what log shippers read, as the kubelet's); "": none.
    pub container_links: String,
}

impl Default for Logs {
    fn default() -> Self {
        let d = podvisor_kubelet::log_rotation::LogRotationConfig::default();
        Self {
            max_size: format!("{}Mi", d.max_size >> 20),
            max_files: d.max_files,
            monitor_interval: d.monitor_interval,
            container_links: "/var/log/containers".into(),
        }
    }
}

impl Logs {
    /// The size in bytes (validated first).
    pub fn max_size_bytes(&self) -> u64 {
        podvisor_core::quantity::parse_units(&self.max_size)
            .ok()
            .and_then(|b| u64::try_from(b).ok())
            .unwrap_or(10 << 20)
    }
}

/// Restart policy of every supervisor in the tree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Supervisor {
    /// Delay before the first restart of a crashed actor; doubles per consecutive crash.
    #[serde(deserialize_with = "duration")]
    pub restart_backoff: Duration,
    #[serde(deserialize_with = "duration")]
    pub restart_backoff_max: Duration,
    /// More restarts than this within `restart_window` and a supervisor gives up and
    /// escalates (at the root: the process exits non-zero for its service manager).
    pub max_restarts: u32,
    #[serde(deserialize_with = "duration")]
    pub restart_window: Duration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Allocatable {
    pub pods: usize,
    /// A quantity ("2", "1500m"); default: the host's CPUs.
    pub cpu: Option<String>,
    /// A quantity ("4Gi"); default: the host's memory.
    pub memory: Option<String>,
}

/// `[runtime]`: how podvisor talks to the container runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeSection {
    /// How long one CRI call may take before podvisor gives up on it (the kubelet's
    /// `runtimeRequestTimeout`); a stop or an exec gets its grace or timeout on top.
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
    /// Calls that change the runtime (creating, starting and removing sandboxes and
    /// containers, stopping sandboxes) in flight at once; the rest wait their turn.
    pub max_mutations_in_flight: usize,
}

impl Default for RuntimeSection {
    fn default() -> Self {
        Self {
            request_timeout: podvisor_cri::Timeouts::default().call,
            max_mutations_in_flight: podvisor_cri::client::default_mutations(),
        }
    }
}

impl RuntimeSection {
    pub fn timeouts(&self) -> podvisor_cri::Timeouts {
        podvisor_cri::Timeouts {
            call: self.request_timeout,
            ..podvisor_cri::Timeouts::default()
        }
    }
}

/// `[node]`: what the Node object starts with, and what pods learn of the cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeSection {
    /// Taints the node registers with (`key=value:Effect`), like the kubelet's
    /// `--register-with-taints`: applied when the Node object is created, never re-added
    /// after `kubectl taint ... key-` removed them.
    pub taints: Vec<String>,
    /// The cluster's DNS servers, as the kubelet's `clusterDNS`: `dnsPolicy: ClusterFirst`
    /// pods resolve through them (none: the host's resolver, as the kubelet falls back).
    pub cluster_dns: Vec<String>,
    /// The cluster's domain, as the kubelet's `clusterDomain`.
    pub cluster_domain: String,
    /// The node's address (the Node's `InternalIP`, pods' `hostIP`), as the kubelet's
    /// `--node-ip`; unset: the address the default route leaves by, else 127.0.0.1.
    pub address: Option<std::net::IpAddr>,
    /// Pods' cgroups under a parent per QoS class (`<cgroup_root>/kubepods/[burstable|
    /// besteffort/]pod<uid>`), as the kubelet's `cgroupsPerQOS`.
    pub cgroups_per_qos: bool,
    /// Where the `kubepods` tree goes, as the kubelet's `--cgroup-root`.
    pub cgroup_root: String,
    /// The runtime's cgroup driver, as the kubelet's `cgroupDriver`: `cgroupfs` or
    /// `systemd` (containerd's `SystemdCgroup = true`). They must agree, or no sandbox
    /// starts. Unset: the runtime is asked (CRI RuntimeConfig), as the kubelet asks it;
    /// `cgroupfs` when it cannot say (containerd 1.6).
    pub cgroup_driver: Option<CgroupDriver>,
    /// Labels the Node registers with, beside the well-known ones, as the kubelet's
    /// `--node-labels` (and refused as it refuses them: see `validate.rs`).
    pub labels: std::collections::BTreeMap<String, String>,
    /// The resolv.conf whose servers and searches `dnsPolicy: Default` pods get (and
    /// ClusterFirst ones without a cluster DNS), as the kubelet's `resolvConf`; "": none.
    pub resolv_conf: String,
    /// Refuse to start on a cgroup v1 host, as the kubelet's `failCgroupV1` (true by
    /// default in a KubeletConfiguration, as the kubelet's; false in podvisor's TOML).
    pub fail_cgroup_v1: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupDriver {
    Cgroupfs,
    Systemd,
}

impl NodeSection {
    pub fn systemd_cgroups(&self) -> bool {
        self.cgroup_driver == Some(CgroupDriver::Systemd)
    }
}

impl Default for NodeSection {
    fn default() -> Self {
        Self {
            taints: Vec::new(),
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
            address: None,
            cgroups_per_qos: true,
            cgroup_root: "/".into(),
            cgroup_driver: None,
            labels: std::collections::BTreeMap::new(),
            resolv_conf: "/etc/resolv.conf".into(),
            fail_cgroup_v1: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Debug {
    pub address: SocketAddr,
    pub token: Option<String>,
    /// Serve `POST /debug/fault/panic/{id}` (crash any live actor), in builds with the
    /// `fault-injection` feature: for chaos tests, never in production.
    pub fault_injection: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Log {
    pub format: LogFormat,
    /// A tracing filter ("info", "podvisor_kubelet=debug").
    pub filter: String,
}

impl Default for Allocatable {
    fn default() -> Self {
        Self {
            pods: 110,
            cpu: None,
            memory: None,
        }
    }
}

impl Default for Pleg {
    fn default() -> Self {
        let d = PlegConfig::default();
        Self {
            mode: d.mode,
            stream_retries: d.max_stream_retries,
            safety_relist: d.safety_relist_period,
            inspect_timeout: d.inspect_timeout,
            event_snapshots: d.event_snapshots,
        }
    }
}

impl Default for Supervisor {
    fn default() -> Self {
        let (backoff, intensity) = (Backoff::default(), Intensity::default());
        Self {
            restart_backoff: backoff.initial,
            restart_backoff_max: backoff.max,
            max_restarts: intensity.max_restarts,
            restart_window: intensity.within,
        }
    }
}

impl Default for Debug {
    fn default() -> Self {
        Self {
            address: podvisor_debug::DEFAULT_ADDRESS
                .parse()
                .expect("valid default"),
            token: None,
            fault_injection: false,
        }
    }
}

/// The Kubernetes API (`[api]`): kubectl and client libraries manage the node through it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Api {
    /// HTTPS, with a certificate of the agent's own CA; every route but the health
    /// checks needs the token in `<state_dir>/kubeconfig`.
    pub address: SocketAddr,
    /// The most changes a watch can resume across, restarts included (beyond the newest
    /// 100, only those of the last 75 s stay).
    pub watch_window: usize,
    /// How far a watcher may fall behind before it is cut off (it then resumes).
    pub watcher_queue: usize,
    /// The Pod Security Standards level of namespaces without the
    /// `pod-security.kubernetes.io/enforce` label.
    pub pod_security: Level,
}

impl Default for Api {
    fn default() -> Self {
        Self {
            address: SocketAddr::from(([127, 0, 0, 1], 6443)),
            watch_window: 10_000,
            watcher_queue: 1_000,
            pod_security: Level::Baseline,
        }
    }
}

/// `[cluster]`: the cluster this node joins. Without a kubeconfig the node stands alone.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cluster {
    /// A kubeconfig for the cluster's API: a bootstrap kubeconfig (a bootstrap token; the
    /// node then asks for a client certificate of its own, kept in `<state_dir>/cluster`)
    /// or one that already acts as the node (`system:node:<node_name>`).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// How long joining waits for the cluster to sign the node's certificate.
    #[serde(deserialize_with = "duration")]
    pub bootstrap_wait: Duration,
    /// The lifetime the node asks for its certificates (unset: the cluster's default; the
    /// API's least is 10 minutes).
    #[serde(deserialize_with = "optional_duration")]
    pub certificate_lifetime: Option<Duration>,
    /// The share of a certificate's lifetime after which the node gets a new one.
    pub rotate_after: f64,
}

impl Default for Cluster {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            bootstrap_wait: Duration::from_secs(300),
            certificate_lifetime: None,
            rotate_after: 0.8,
        }
    }
}

impl Cluster {
    /// The lifetime to ask for, if any.
    pub fn lifetime(&self) -> Option<Duration> {
        self.certificate_lifetime
    }
}

impl Default for Log {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            filter: "info".into(),
        }
    }
}
