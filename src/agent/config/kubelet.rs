//! The kubelet's own configuration file, `kubelet.config.k8s.io/v1beta1`
//! `KubeletConfiguration` (YAML or JSON: what kubeadm, kops and Cluster API write to
//! `/var/lib/kubelet/config.yaml`), read into podvisor's. Each field podvisor honours is
//! mapped onto its key; every other field of the kubelet's schema is accepted only when it
//! is unset (the zero value kubeadm writes for "the default") or holds the kubelet's own
//! default, which podvisor behaves as (`kubelet_fields.rs`), and is otherwise refused by
//! name with the reason. A field the schema does not have is refused, as the kubelet's
//! strict decoding does.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::kubelet_fields::{self, Verdict};
use super::kubelet_nested::{authentication, authorization, logging};
use super::sections::CgroupDriver;
use super::{AgentConfig, ConfigError};

pub(super) const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
pub(super) const KIND: &str = "KubeletConfiguration";

/// Whether `text` is a `KubeletConfiguration` (rather than podvisor's TOML).
pub(super) fn is_kubelet_configuration(text: &str) -> bool {
    serde_yaml_ng::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("kind").and_then(Value::as_str).map(|k| k == KIND))
        .unwrap_or(false)
}

pub(super) fn refuse(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Kubelet {
        field: field.to_string(),
        message: message.into(),
    }
}

/// `value` as a `T`, or the field's name with why not.
pub(super) fn typed<T: DeserializeOwned>(field: &str, value: &Value) -> Result<T, ConfigError> {
    serde_json::from_value(value.clone()).map_err(|e| refuse(field, e.to_string()))
}

/// A Go duration (`"1m0s"`, `"10s"`, `"1h2m3.5s"`, `"0s"`), as the kubelet's
/// `metav1.Duration` fields hold them.
pub(super) fn go_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() {
        return None;
    }
    let (mut rest, mut total) = (s, 0f64);
    while !rest.is_empty() {
        let n_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let n: f64 = rest[..n_end].parse().ok()?;
        let unit_end = rest[n_end..]
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .map_or(rest.len(), |i| n_end + i);
        let scale = match &rest[n_end..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    (total.is_finite() && total <= 86_400.0 * 365.0).then(|| Duration::from_secs_f64(total))
}

/// A duration field: `None` when zero (the kubelet's default applies).
pub(super) fn duration(field: &str, value: &Value) -> Result<Option<Duration>, ConfigError> {
    let s: String = typed(field, value)?;
    let d = go_duration(&s)
        .ok_or_else(|| refuse(field, format!("{s:?} is not a duration like \"1m0s\"")))?;
    Ok((!d.is_zero()).then_some(d))
}

/// Reads a `KubeletConfiguration` into podvisor's configuration, starting from the
/// kubelet's defaults where they differ from podvisor's own (its health endpoint).
pub fn from_kubelet_configuration(text: &str) -> Result<AgentConfig, ConfigError> {
    let doc: Value =
        serde_yaml_ng::from_str(text).map_err(|e| refuse("(the document)", e.to_string()))?;
    let Value::Object(fields) = doc else {
        return Err(refuse(
            "(the document)",
            "a KubeletConfiguration is a mapping of fields",
        ));
    };
    let mut cfg = AgentConfig::default();
    cfg.healthz.address = Some(SocketAddr::from(([127, 0, 0, 1], 10248)));
    cfg.node.fail_cgroup_v1 = true;
    let mut server = Server::default();
    for (field, value) in &fields {
        apply(&mut cfg, &mut server, field, value)?;
    }
    server.apply(&mut cfg);
    Ok(cfg)
}

/// The kubelet server's and health endpoint's addresses come in two fields each.
#[derive(Default)]
struct Server {
    address: Option<IpAddr>,
    port: Option<u16>,
    healthz_address: Option<IpAddr>,
    healthz_port: Option<u16>,
}

impl Server {
    fn apply(self, cfg: &mut AgentConfig) {
        if let Some(ip) = self.address {
            cfg.server.address.set_ip(ip);
        }
        if let Some(port) = self.port {
            cfg.server.address.set_port(port);
        }
        let healthz = cfg
            .healthz
            .address
            .get_or_insert(SocketAddr::from(([127, 0, 0, 1], 10248)));
        if let Some(ip) = self.healthz_address {
            healthz.set_ip(ip);
        }
        if self.healthz_port == Some(0) {
            cfg.healthz.address = None;
        } else if let Some(port) = self.healthz_port {
            healthz.set_port(port);
        }
    }
}

fn apply(
    cfg: &mut AgentConfig,
    server: &mut Server,
    field: &str,
    v: &Value,
) -> Result<(), ConfigError> {
    match field {
        "apiVersion" if v.as_str() == Some(API_VERSION) => {}
        "apiVersion" => return Err(refuse(field, format!("{v} is not {API_VERSION}"))),
        "kind" => {}
        "authentication" => authentication(cfg, v)?,
        "authorization" => authorization(v)?,
        "logging" => logging(cfg, v)?,
        _ => {
            if !apply_paths(cfg, field, v)?
                && !apply_node(cfg, field, v)?
                && !apply_periods(cfg, field, v)?
                && !apply_server(cfg, server, field, v)?
                && !super::eviction::apply(cfg, field, v)?
            {
                not_honoured(field, v)?;
            }
        }
    }
    Ok(())
}

/// A field podvisor does not map: accepted unset or at the kubelet's default, else refused.
fn not_honoured(field: &str, v: &Value) -> Result<(), ConfigError> {
    match kubelet_fields::verdict(field, v) {
        Verdict::Accepted => Ok(()),
        Verdict::Refused { default, reason } => Err(refuse(
            field,
            format!(
                "{v} is not honoured: {reason} (accepted: unset, or the kubelet's default {default})"
            ),
        )),
        Verdict::Unknown => Err(refuse(
            field,
            format!("not a field of {API_VERSION} {KIND}"),
        )),
    }
}

fn apply_paths(cfg: &mut AgentConfig, field: &str, v: &Value) -> Result<bool, ConfigError> {
    let path = |cfg_path: &mut std::path::PathBuf| -> Result<(), ConfigError> {
        let p: String = typed(field, v)?;
        if !p.is_empty() {
            *cfg_path = p.into();
        }
        Ok(())
    };
    match field {
        "staticPodPath" => path(&mut cfg.manifest_dir)?,
        "podLogsDir" => path(&mut cfg.pod_log_dir)?,
        "resolvConf" => {
            if let Some(p) = typed::<Option<String>>(field, v)? {
                cfg.node.resolv_conf = p;
            }
        }
        "containerRuntimeEndpoint" => {
            let e: String = typed(field, v)?;
            if !e.is_empty() {
                cfg.runtime_endpoint = e;
            }
        }
        "imageServiceEndpoint" => {
            let e: String = typed(field, v)?;
            if !e.is_empty() && e != cfg.runtime_endpoint {
                return Err(refuse(
                    field,
                    "podvisor pulls images through the runtime's own endpoint \
                     (containerRuntimeEndpoint); a separate image service is not supported",
                ));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn apply_node(cfg: &mut AgentConfig, field: &str, v: &Value) -> Result<bool, ConfigError> {
    let node = &mut cfg.node;
    match field {
        "clusterDomain" => {
            let d: String = typed(field, v)?;
            if !d.is_empty() {
                node.cluster_domain = d;
            }
        }
        "clusterDNS" => {
            node.cluster_dns = typed::<Option<Vec<String>>>(field, v)?.unwrap_or_default()
        }
        "cgroupRoot" => {
            let r: String = typed(field, v)?;
            if !r.is_empty() {
                node.cgroup_root = r;
            }
        }
        "cgroupsPerQOS" => node.cgroups_per_qos = typed(field, v)?,
        "failCgroupV1" => {
            if let Some(fail) = typed::<Option<bool>>(field, v)? {
                node.fail_cgroup_v1 = fail;
            }
        }
        "cgroupDriver" => match typed::<String>(field, v)?.as_str() {
            "" => {}
            "cgroupfs" => node.cgroup_driver = Some(CgroupDriver::Cgroupfs),
            "systemd" => node.cgroup_driver = Some(CgroupDriver::Systemd),
            other => return Err(refuse(field, format!("{other:?}: cgroupfs or systemd"))),
        },
        "registerWithTaints" => node.taints = taints(field, v)?,
        "maxPods" => {
            let n: i64 = typed(field, v)?;
            if n != 0 {
                cfg.allocatable.pods = usize::try_from(n)
                    .map_err(|_| refuse(field, format!("{n} is not a number of pods")))?;
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `registerWithTaints`: Taint objects, as podvisor's `key=value:Effect` strings.
fn taints(field: &str, v: &Value) -> Result<Vec<String>, ConfigError> {
    let list: Option<Vec<k8s_openapi::api::core::v1::Taint>> = typed(field, v)?;
    Ok(list
        .unwrap_or_default()
        .into_iter()
        .map(|t| match t.value.filter(|v| !v.is_empty()) {
            Some(value) => format!("{}={value}:{}", t.key, t.effect),
            None => format!("{}:{}", t.key, t.effect),
        })
        .collect())
}

fn apply_periods(cfg: &mut AgentConfig, field: &str, v: &Value) -> Result<bool, ConfigError> {
    let slot = match field {
        "syncFrequency" => &mut cfg.resync_interval,
        "fileCheckFrequency" => &mut cfg.manifest_rescan_period,
        "runtimeRequestTimeout" => &mut cfg.runtime.request_timeout,
        "streamingConnectionIdleTimeout" => &mut cfg.streaming.idle_timeout,
        "containerLogMonitorInterval" => &mut cfg.logs.monitor_interval,
        "containerLogMaxSize" => {
            let s: String = typed(field, v)?;
            if !s.is_empty() {
                cfg.logs.max_size = s;
            }
            return Ok(true);
        }
        "containerLogMaxFiles" => {
            let n: i64 = typed(field, v)?;
            if n != 0 {
                cfg.logs.max_files = usize::try_from(n)
                    .map_err(|_| refuse(field, format!("{n} is not a number of files")))?;
            }
            return Ok(true);
        }
        _ => return Ok(false),
    };
    if let Some(d) = duration(field, v)? {
        *slot = d;
    }
    Ok(true)
}

fn apply_server(
    cfg: &mut AgentConfig,
    server: &mut Server,
    field: &str,
    v: &Value,
) -> Result<bool, ConfigError> {
    match field {
        "enableServer" => cfg.server.enabled = typed(field, v)?,
        "address" => server.address = ip(field, v)?,
        "port" => server.port = port(field, v)?,
        "healthzBindAddress" => server.healthz_address = ip(field, v)?,
        "healthzPort" => server.healthz_port = Some(port(field, v)?.unwrap_or(0)),
        "serverTLSBootstrap" => cfg.server.tls_bootstrap = typed(field, v)?,
        "rotateCertificates" if typed::<bool>(field, v)? => {}
        "rotateCertificates" => {
            return Err(refuse(
                field,
                "false is not honoured: podvisor always renews its client certificate \
                 before it expires (rotate_after in [cluster])",
            ));
        }
        "tlsCertFile" | "tlsPrivateKeyFile" if v.as_str().is_some_and(str::is_empty) => {}
        "tlsCertFile" | "tlsPrivateKeyFile" => {
            return Err(refuse(
                field,
                "not honoured: podvisor's :10250 serves a certificate the cluster signs \
                 (serverTLSBootstrap) or one it makes itself, not one from a file",
            ));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn ip(field: &str, v: &Value) -> Result<Option<IpAddr>, ConfigError> {
    let s: String = typed(field, v)?;
    if s.is_empty() {
        return Ok(None);
    }
    s.parse()
        .map(Some)
        .map_err(|e| refuse(field, format!("{s:?}: {e}")))
}

fn port(field: &str, v: &Value) -> Result<Option<u16>, ConfigError> {
    let n: i64 = typed(field, v)?;
    u16::try_from(n)
        .map(|p| (p != 0).then_some(p))
        .map_err(|_| refuse(field, format!("{n} is not a port")))
}

#[cfg(test)]
#[path = "kubelet_tests.rs"]
mod tests;
