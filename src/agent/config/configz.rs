//! `/configz`: the configuration the node runs with, as the kubelet shows it: a
//! `KubeletConfiguration` (`kubelet.config.k8s.io/v1beta1`) under `kubeletconfig`, every
//! field filled. The fields podvisor maps come from its configuration (whichever file and
//! flags it was given), the others at the kubelet's defaults, which podvisor behaves as.
//! Read back by `--config`, it gives the same configuration (tested).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::kubelet::{API_VERSION, KIND};
use super::kubelet_fields;
use super::{AgentConfig, CgroupDriver, LogFormat};

/// The body of `GET /configz`.
pub fn configz(cfg: &AgentConfig) -> Value {
    let mut m: Map<String, Value> = kubelet_fields::defaults()
        .map(|(f, v)| (f.to_string(), v))
        .collect();
    for (k, v) in mapped(cfg) {
        m.insert(k.to_string(), v);
    }
    m.insert("kind".into(), KIND.into());
    m.insert("apiVersion".into(), API_VERSION.into());
    json!({ "kubeletconfig": m })
}

fn mapped(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    let mut v = paths(cfg);
    v.extend(node(cfg));
    v.extend(periods(cfg));
    v.extend(server(cfg));
    v.extend(super::eviction::configz(cfg));
    v
}

fn paths(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    vec![
        ("staticPodPath", json!(cfg.manifest_dir)),
        ("podLogsDir", json!(cfg.pod_log_dir)),
        ("resolvConf", json!(cfg.node.resolv_conf)),
        ("containerRuntimeEndpoint", json!(cfg.runtime_endpoint)),
        ("imageServiceEndpoint", json!("")),
    ]
}

fn node(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    let n = &cfg.node;
    let driver = match n.cgroup_driver {
        Some(CgroupDriver::Systemd) => "systemd",
        Some(CgroupDriver::Cgroupfs) | None => "cgroupfs",
    };
    vec![
        ("clusterDomain", json!(n.cluster_domain)),
        ("clusterDNS", json!(n.cluster_dns)),
        ("cgroupRoot", json!(n.cgroup_root)),
        ("cgroupsPerQOS", json!(n.cgroups_per_qos)),
        ("failCgroupV1", json!(n.fail_cgroup_v1)),
        ("cgroupDriver", json!(driver)),
        ("registerWithTaints", taints(&n.taints)),
        ("maxPods", json!(cfg.allocatable.pods)),
    ]
}

/// podvisor's `key=value:Effect` strings as Taint objects.
fn taints(taints: &[String]) -> Value {
    let objects: Vec<Value> = taints
        .iter()
        .map(|t| {
            let (kv, effect) = t.rsplit_once(':').unwrap_or((t, ""));
            let mut o = Map::new();
            match kv.split_once('=') {
                Some((k, v)) => {
                    o.insert("key".into(), k.into());
                    o.insert("value".into(), v.into());
                }
                None => {
                    o.insert("key".into(), kv.into());
                }
            }
            o.insert("effect".into(), effect.into());
            Value::Object(o)
        })
        .collect();
    Value::Array(objects)
}

fn periods(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    vec![
        ("syncFrequency", go(cfg.resync_interval)),
        ("fileCheckFrequency", go(cfg.manifest_rescan_period)),
        ("runtimeRequestTimeout", go(cfg.runtime.request_timeout)),
        (
            "streamingConnectionIdleTimeout",
            go(cfg.streaming.idle_timeout),
        ),
        ("containerLogMonitorInterval", go(cfg.logs.monitor_interval)),
        ("containerLogMaxSize", json!(cfg.logs.max_size)),
        ("containerLogMaxFiles", json!(cfg.logs.max_files)),
    ]
}

fn server(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    let (healthz_address, healthz_port) = match cfg.healthz.address {
        Some(a) => (json!(a.ip().to_string()), json!(a.port())),
        None => (json!("127.0.0.1"), json!(0)),
    };
    let client_ca = cfg
        .server
        .client_ca_file
        .as_ref()
        .map_or(Value::from(""), |p| json!(p));
    let verbosity = match cfg.log.filter.as_str() {
        "info" => 0,
        f if f.contains("=trace") => 5,
        _ => 2,
    };
    let format = match cfg.log.format {
        LogFormat::Human => "text",
        LogFormat::Json => "json",
    };
    vec![
        ("enableServer", json!(cfg.server.enabled)),
        ("address", json!(cfg.server.address.ip().to_string())),
        ("port", json!(cfg.server.address.port())),
        ("healthzBindAddress", healthz_address),
        ("healthzPort", healthz_port),
        ("serverTLSBootstrap", json!(cfg.server.tls_bootstrap)),
        ("rotateCertificates", json!(true)),
        (
            "authentication",
            json!({
                "x509": {"clientCAFile": client_ca},
                "webhook": {"enabled": true, "cacheTTL": "0s"},
                "anonymous": {"enabled": false},
            }),
        ),
        (
            "authorization",
            json!({"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"}}),
        ),
        ("logging", json!({"format": format, "verbosity": verbosity})),
    ]
}

/// A duration as Go's `time.Duration` prints it (`"1m0s"`, `"10s"`, `"1.5s"`, `"100ms"`).
pub(super) fn go(d: Duration) -> Value {
    Value::String(go_string(d))
}

fn go_string(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        return match nanos {
            n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
            n if n % 1_000 == 0 => format!("{}µs", n / 1_000),
            n => format!("{n}ns"),
        };
    }
    let secs = d.as_secs();
    let frac = d.subsec_nanos();
    let s = if frac == 0 {
        format!("{}s", secs % 60)
    } else {
        let f = format!("{:09}", frac);
        format!("{}.{}s", secs % 60, f.trim_end_matches('0'))
    };
    match (secs / 3600, secs / 60 % 60) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::from_kubelet_configuration;
    use super::*;

    const KUBEADM: &str = include_str!("../../../tests/fixtures/kubelet-config.yaml");

    #[test]
    fn durations_print_as_go_prints_them() {
        let s = Duration::from_secs;
        assert_eq!(go_string(Duration::ZERO), "0s");
        assert_eq!(go_string(s(10)), "10s");
        assert_eq!(go_string(s(60)), "1m0s");
        assert_eq!(go_string(s(4 * 3600)), "4h0m0s");
        assert_eq!(go_string(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_string(Duration::from_millis(100)), "100ms");
        assert_eq!(go_string(s(3723)), "1h2m3s");
    }

    #[test]
    fn configz_reads_back_as_the_same_configuration() {
        let cfg = from_kubelet_configuration(KUBEADM).unwrap();
        let shown = configz(&cfg);
        let body = &shown["kubeletconfig"];
        assert_eq!(body["kind"], "KubeletConfiguration");
        assert_eq!(body["staticPodPath"], "/etc/kubernetes/manifests");
        assert_eq!(body["cgroupDriver"], "systemd");
        assert_eq!(body["healthzPort"], 10248);
        assert_eq!(
            body["evictionHard"]["memory.available"], "100Mi",
            "the kubelet's thresholds, which kubeadm's file leaves unset"
        );
        assert_eq!(body["imageGCHighThresholdPercent"], 85);
        let again = from_kubelet_configuration(&body.to_string()).expect("configz reads back");
        assert_eq!(
            configz(&again),
            shown,
            "the same configuration, field by field"
        );
    }

    #[test]
    fn podvisor_s_own_defaults_show_as_kubelet_fields() {
        let mut cfg = AgentConfig::default();
        cfg.node.taints = vec!["a=b:NoSchedule".into(), "c:NoExecute".into()];
        let body = configz(&cfg)["kubeletconfig"].clone();
        assert_eq!(body["registerWithTaints"][0]["value"], "b");
        assert_eq!(body["registerWithTaints"][1]["effect"], "NoExecute");
        assert_eq!(body["syncFrequency"], "1m0s");
        assert_eq!(body["healthzPort"], 0, "off in podvisor's TOML by default");
        let again = from_kubelet_configuration(&body.to_string()).unwrap();
        assert_eq!(configz(&again), configz(&cfg));
    }
}
