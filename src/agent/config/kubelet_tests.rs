use std::time::Duration;

use super::*;
use crate::agent::config::LogFormat;

const KUBEADM: &str = include_str!("../../../tests/fixtures/kubelet-config.yaml");

#[test]
fn go_durations_read_as_the_kubelet_writes_them() {
    assert_eq!(go_duration("0s"), Some(Duration::ZERO));
    assert_eq!(go_duration("1m0s"), Some(Duration::from_secs(60)));
    assert_eq!(
        go_duration("1h2m3.5s"),
        Some(Duration::from_secs_f64(3723.5))
    );
    assert_eq!(go_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(go_duration("4h0m0s"), Some(Duration::from_secs(4 * 3600)));
    assert_eq!(go_duration("10"), None);
    assert_eq!(go_duration("5d"), None);
    assert_eq!(go_duration(""), None);
}

#[test]
fn kubeadm_s_file_is_taken_whole_and_maps_onto_podvisor_s_keys() {
    assert!(is_kubelet_configuration(KUBEADM));
    assert!(!is_kubelet_configuration("node_name = \"a\""));
    let cfg = from_kubelet_configuration(KUBEADM).unwrap();
    let default = AgentConfig::default();
    assert_eq!(
        cfg.manifest_dir,
        std::path::Path::new("/etc/kubernetes/manifests")
    );
    assert_eq!(cfg.node.cluster_dns, ["10.96.0.10"]);
    assert_eq!(cfg.node.cluster_domain, "cluster.local");
    assert_eq!(cfg.node.cgroup_driver, Some(CgroupDriver::Systemd));
    assert!(
        cfg.node.fail_cgroup_v1,
        "unset: the kubelet's default, true"
    );
    assert_eq!(cfg.node.resolv_conf, "/run/systemd/resolve/resolv.conf");
    assert_eq!(
        cfg.server.client_ca_file.as_deref(),
        Some(std::path::Path::new("/etc/kubernetes/pki/ca.crt"))
    );
    assert_eq!(
        cfg.healthz.address,
        Some("127.0.0.1:10248".parse().unwrap())
    );
    // Zero values keep the defaults.
    assert_eq!(cfg.resync_interval, default.resync_interval);
    assert_eq!(cfg.runtime.request_timeout, default.runtime.request_timeout);
    assert_eq!(cfg.streaming.idle_timeout, default.streaming.idle_timeout);
    assert_eq!(cfg.runtime_endpoint, default.runtime_endpoint);
}

#[test]
fn set_fields_are_honoured() {
    let cfg = from_kubelet_configuration(
        r#"{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "syncFrequency": "30s", "maxPods": 42, "address": "127.0.0.1", "port": 11250,
            "healthzPort": 0, "containerRuntimeEndpoint": "unix:///run/c.sock",
            "registerWithTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"},
                                   {"key": "e", "effect": "NoExecute"}],
            "containerLogMaxSize": "5Mi", "containerLogMaxFiles": 3,
            "cgroupsPerQOS": false, "logging": {"format": "json", "verbosity": 4}}"#,
    )
    .unwrap();
    assert_eq!(cfg.resync_interval, Duration::from_secs(30));
    assert_eq!(cfg.allocatable.pods, 42);
    assert_eq!(cfg.server.address, "127.0.0.1:11250".parse().unwrap());
    assert_eq!(cfg.healthz.address, None, "port 0 turns it off");
    assert_eq!(cfg.runtime_endpoint, "unix:///run/c.sock");
    assert_eq!(cfg.node.taints, ["k=v:NoSchedule", "e:NoExecute"]);
    assert_eq!((cfg.logs.max_size.as_str(), cfg.logs.max_files), ("5Mi", 3));
    assert!(!cfg.node.cgroups_per_qos);
    assert_eq!(cfg.log.format, LogFormat::Json);
    assert!(cfg.log.filter.contains("debug"), "{}", cfg.log.filter);
    cfg.validate().unwrap();
}

fn refused(extra: &str) -> String {
    let doc =
        format!("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{extra}\n");
    from_kubelet_configuration(&doc).unwrap_err().to_string()
}

#[test]
fn a_field_podvisor_does_not_honour_is_refused_by_name_with_the_reason() {
    let e = refused("readOnlyPort: 10255");
    assert!(
        e.contains("readOnlyPort") && e.contains("read-only port"),
        "{e}"
    );
    let e = refused("evictionHard:\n  allocatableMemory.available: 200Mi");
    assert!(
        e.contains("evictionHard") && e.contains("node-allocatable"),
        "{e}"
    );
    let e = refused("featureGates:\n  SomeGate: true");
    assert!(e.contains("featureGates"), "{e}");
    let e = refused("authorization:\n  mode: AlwaysAllow");
    assert!(e.contains("authorization.mode"), "{e}");
    let e = refused("authentication:\n  anonymous:\n    enabled: true");
    assert!(e.contains("authentication.anonymous.enabled"), "{e}");
    let e = refused("tlsCertFile: /etc/kubelet.crt");
    assert!(e.contains("tlsCertFile"), "{e}");
    let e = refused("maxPods: lots");
    assert!(e.contains("maxPods"), "{e}");
}

#[test]
fn a_field_the_kubelet_does_not_have_and_another_version_are_refused() {
    let e = refused("readOnlyPorts: 0");
    assert!(
        e.contains("readOnlyPorts") && e.contains("not a field"),
        "{e}"
    );
    let e = from_kubelet_configuration(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("apiVersion"), "{e}");
}

#[test]
fn a_default_written_out_is_accepted() {
    let cfg = from_kubelet_configuration(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         readOnlyPort: 0\nimageGCHighThresholdPercent: 85\ncpuManagerPolicy: none\n\
         nodeLeaseDurationSeconds: 40\nenforceNodeAllocatable: [pods]\n",
    );
    assert!(cfg.is_ok(), "{cfg:?}");
}
