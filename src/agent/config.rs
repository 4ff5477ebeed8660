//! The agent's configuration: a TOML file (`config/podvisor.toml` documents every key and
//! its default) plus the command-line flags people change most. Unknown keys and bad
//! values are refused with the key and the reason.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use podvisor_actors::supervisor::{Backoff, Intensity};
use podvisor_apiserver::pod_security::Level;
use podvisor_kubelet::pleg::{PlegConfig, PlegMode};
use serde::{Deserialize, Deserializer};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The node's name; empty means the host name.
    pub node_name: String,
    pub runtime_endpoint: String,
    pub manifest_dir: PathBuf,
    pub state_dir: PathBuf,
    pub pod_log_dir: PathBuf,
    #[serde(deserialize_with = "duration")]
    pub relist_period: Duration,
    #[serde(deserialize_with = "duration")]
    pub resync_interval: Duration,
    #[serde(deserialize_with = "duration")]
    pub sync_backoff: Duration,
    #[serde(deserialize_with = "duration")]
    pub manifest_rescan_period: Duration,
    #[serde(deserialize_with = "duration")]
    pub housekeeping_period: Duration,
    pub runtime: RuntimeSection,
    pub allocatable: Allocatable,
    pub node: NodeSection,
    pub pleg: Pleg,
    pub probes: Probes,
    pub logs: Logs,
    pub supervisor: Supervisor,
    pub debug: Debug,
    pub api: Api,
    pub log: Log,
}

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
}

impl Default for Logs {
    fn default() -> Self {
        let d = podvisor_kubelet::log_rotation::LogRotationConfig::default();
        Self {
            max_size: format!("{}Mi", d.max_size >> 20),
            max_files: d.max_files,
            monitor_interval: d.monitor_interval,
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
            max_mutations_in_flight: podvisor_cri::client::DEFAULT_MUTATIONS,
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

/// `[node]`: what the Node object starts with.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeSection {
    /// Taints the node registers with (`key=value:Effect`), like the kubelet's
    /// `--register-with-taints`: applied when the Node object is created, never re-added
    /// after `kubectl taint ... key-` removed them.
    pub taints: Vec<String>,
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

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            node_name: String::new(),
            runtime_endpoint: podvisor_cri::DEFAULT_ENDPOINT.into(),
            manifest_dir: "/etc/podvisor/manifests".into(),
            state_dir: "/var/lib/podvisor".into(),
            pod_log_dir: "/var/log/pods".into(),
            relist_period: Duration::from_secs(1),
            resync_interval: Duration::from_secs(60),
            sync_backoff: Duration::from_secs(10),
            manifest_rescan_period: Duration::from_secs(20),
            housekeeping_period: Duration::from_secs(2),
            runtime: RuntimeSection::default(),
            allocatable: Allocatable::default(),
            node: NodeSection::default(),
            pleg: Pleg::default(),
            probes: Probes::default(),
            logs: Logs::default(),
            supervisor: Supervisor::default(),
            debug: Debug::default(),
            api: Api::default(),
            log: Log::default(),
        }
    }
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

/// The defaults are the libraries' own, so the file and the code cannot drift apart.
impl Default for Pleg {
    fn default() -> Self {
        let d = PlegConfig::default();
        Self {
            mode: d.mode,
            stream_retries: d.max_stream_retries,
            safety_relist: d.safety_relist_period,
            inspect_timeout: d.inspect_timeout,
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
    /// How many changes a watch can resume across, restarts included.
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

impl Default for Log {
    fn default() -> Self {
        Self {
            format: LogFormat::Human,
            filter: "info".into(),
        }
    }
}

/// "500ms", "1s", "2m", "1h".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().map_err(|_| {
        format!("invalid duration {s:?}: expected a number and a unit, like \"500ms\" or \"2s\"")
    })?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration {s:?}: the unit must be ms, s, m or h"
            ));
        }
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("invalid duration {s:?}: it must be positive"));
    }
    // Every duration here is a period or a timeout; a day is already absurd, and far
    // larger values would overflow the timers that add them to the current instant.
    if secs > 86_400.0 {
        return Err(format!("invalid duration {s:?}: it must be at most 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    parse_duration(&s).map_err(serde::de::Error::custom)
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("invalid setting {key}: {message}")]
    Value { key: &'static str, message: String },
}

impl AgentConfig {
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())
    }

    /// Checks what serde cannot: values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let quantity =
            |key: &'static str, v: &Option<String>, milli: bool| -> Result<(), ConfigError> {
                if let Some(q) = v {
                    let parsed = if milli {
                        podvisor_core::quantity::parse_milli(q)
                    } else {
                        podvisor_core::quantity::parse_units(q)
                    };
                    parsed.map_err(|e| ConfigError::Value {
                        key,
                        message: e.to_string(),
                    })?;
                }
                Ok(())
            };
        for t in &self.node.taints {
            podvisor_core::taints::parse(t).map_err(|message| ConfigError::Value {
                key: "node.taints",
                message,
            })?;
        }
        quantity("allocatable.cpu", &self.allocatable.cpu, true)?;
        quantity("allocatable.memory", &self.allocatable.memory, false)?;
        if self.runtime.max_mutations_in_flight == 0 {
            return Err(ConfigError::Value {
                key: "runtime.max_mutations_in_flight",
                message: "must be at least 1".into(),
            });
        }
        if self.allocatable.pods == 0 {
            return Err(ConfigError::Value {
                key: "allocatable.pods",
                message: "must be at least 1".into(),
            });
        }
        podvisor_cri::Endpoint::parse(&self.runtime_endpoint).map_err(|e| ConfigError::Value {
            key: "runtime_endpoint",
            message: e.to_string(),
        })?;
        for (key, p) in [
            ("manifest_dir", &self.manifest_dir),
            ("state_dir", &self.state_dir),
            ("pod_log_dir", &self.pod_log_dir),
        ] {
            if !p.is_absolute() {
                return Err(ConfigError::Value {
                    key,
                    message: format!("{} must be an absolute path", p.display()),
                });
            }
        }
        if !self.node_name.is_empty() {
            podvisor_core::validation::names::node_name(&self.node_name).map_err(|e| {
                ConfigError::Value {
                    key: "node_name",
                    message: e.to_string(),
                }
            })?;
        }
        if self.supervisor.restart_backoff > self.supervisor.restart_backoff_max {
            return Err(ConfigError::Value {
                key: "supervisor.restart_backoff",
                message: "must not exceed supervisor.restart_backoff_max".into(),
            });
        }
        for (key, n) in [
            ("probes.max_in_flight", self.probes.max_in_flight),
            ("probes.max_exec_in_flight", self.probes.max_exec_in_flight),
        ] {
            if n == 0 {
                return Err(ConfigError::Value {
                    key,
                    message: "must be at least 1".into(),
                });
            }
        }
        let size = podvisor_core::quantity::parse_units(&self.logs.max_size);
        if !size.as_ref().is_ok_and(|b| *b > 0) {
            return Err(ConfigError::Value {
                key: "logs.max_size",
                message: format!(
                    "{:?} is not a positive quantity like \"10Mi\"",
                    self.logs.max_size
                ),
            });
        }
        if self.logs.max_files < 2 {
            return Err(ConfigError::Value {
                key: "logs.max_files",
                message: "must be at least 2 (the live log and one rotated)".into(),
            });
        }
        if self.supervisor.max_restarts == 0 {
            return Err(ConfigError::Value {
                key: "supervisor.max_restarts",
                message: "must be at least 1".into(),
            });
        }
        if self.debug.fault_injection && !cfg!(feature = "fault-injection") {
            return Err(ConfigError::Value {
                key: "debug.fault_injection",
                message:
                    "this build has no fault injection (build with --features fault-injection)"
                        .into(),
            });
        }
        if self.debug.fault_injection
            && !self.debug.address.ip().is_loopback()
            && self.debug.token.is_none()
        {
            return Err(ConfigError::Value {
                key: "debug.fault_injection",
                message: "crashing actors from off the loopback needs debug.token".into(),
            });
        }
        if self.debug.token.as_deref() == Some("") {
            return Err(ConfigError::Value {
                key: "debug.token",
                message: "must not be empty (leave it out instead)".into(),
            });
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.filter).map_err(|e| {
            ConfigError::Value {
                key: "log.filter",
                message: e.to_string(),
            }
        })?;
        Ok(())
    }

    pub fn node_name(&self) -> String {
        if !self.node_name.is_empty() {
            return self.node_name.clone();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_lowercase())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_file_is_the_defaults() {
        let documented = include_str!("../../config/podvisor.toml");
        let parsed = AgentConfig::parse(documented).unwrap();
        let default = AgentConfig::default();
        assert_eq!(format!("{parsed:?}"), format!("{default:?}"));
        parsed.validate().unwrap();
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_the_reason() {
        let e = AgentConfig::parse("relist_perod = \"1s\"").unwrap_err();
        assert!(e.contains("unknown field `relist_perod`"), "{e}");
        let e = AgentConfig::parse("relist_period = \"fast\"").unwrap_err();
        assert!(
            e.contains("relist_period") && e.contains("invalid duration \"fast\""),
            "{e}"
        );
        let e = AgentConfig::parse("[debug]\naddress = \"nowhere\"").unwrap_err();
        assert!(
            e.contains("address") && e.contains("invalid socket address"),
            "{e}"
        );
        let e = AgentConfig::parse("[log]\nformat = \"xml\"").unwrap_err();
        assert!(
            e.contains("format") && e.contains("unknown variant `xml`"),
            "{e}"
        );
        let c = AgentConfig::parse("[allocatable]\ncpu = \"lots\"").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid setting allocatable.cpu: invalid quantity \"lots\""
        );
        let c = AgentConfig::parse("node_name = \"My_Node\"").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.starts_with("invalid setting node_name") && e.contains("RFC 1123 subdomain"),
            "{e}"
        );
        let e = AgentConfig::parse("[pleg]\nmode = \"psychic\"").unwrap_err();
        assert!(e.contains("mode") && e.contains("unknown variant"), "{e}");
        let c = AgentConfig::parse(
            "[supervisor]\nrestart_backoff = \"10s\"\nrestart_backoff_max = \"1s\"",
        )
        .unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .starts_with("invalid setting supervisor.restart_backoff")
        );
        let c = AgentConfig::parse("[node]\ntaints = [\"gpu=yes:NoExecute\", \"bad\"]").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.starts_with("invalid setting node.taints") && e.contains("\"bad\""),
            "{e}"
        );
        let c = AgentConfig::parse("state_dir = \"relative/dir\"").unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .starts_with("invalid setting state_dir")
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5").is_err());
        // Would overflow Duration (a panic) or the timers: refused with the reason.
        let huge = parse_duration("99999999999999999999999h").unwrap_err();
        assert!(huge.contains("at most 24h"), "{huge}");
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
    }
}
