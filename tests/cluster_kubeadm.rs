//! podvisor in place of a kubeadm node's kubelet: started as kubelet.service starts one
//! (flags only), with the KubeletConfiguration kubeadm 1.37 writes
//! (tests/fixtures/kubelet-config.yaml) and the flags of its kubeadm-flags.env
//! (tests/fixtures/kubeadm-flags.env), only this machine's paths and ports put in. It joins
//! the real control plane with the bootstrap kubeconfig, registers with the labels and
//! taints of the flags, answers /healthz where kubeadm looks, takes its cgroup driver from
//! the runtime, and runs a pod the scheduler binds to it.

mod common;

use std::path::Path;

use common::agent::{Agent, below_ephemeral};
use common::eventually;
use common::nodes::*;

const KUBELET_CONFIG: &str = include_str!("fixtures/kubelet-config.yaml");
const KUBEADM_FLAGS: &str = include_str!("fixtures/kubeadm-flags.env");
const EVICTION: &str = "evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 512Mi\n  imagefs.available: 512Mi\nimageGCHighThresholdPercent: 100\n";

/// kubeadm's file with this machine's paths and ports in place of a kubeadm node's.
fn kubelet_config(dir: &Path, (port, healthz): (u16, u16)) -> String {
    let ca = common::cluster::dir().join("pki/ca.crt");
    let text = KUBELET_CONFIG
        .replace("/etc/kubernetes/pki/ca.crt", &ca.display().to_string())
        .replace(
            "/etc/kubernetes/manifests",
            &dir.join("manifests").display().to_string(),
        )
        .replace("/run/systemd/resolve/resolv.conf", "/etc/resolv.conf")
        .replace("healthzPort: 10248", &format!("healthzPort: {healthz}"))
        // Asked of the runtime instead: the test containerd's is cgroupfs.
        .replace("cgroupDriver: systemd\n", "");
    // This machine is cgroup v1, where kubeadm's admin sets failCgroupV1: false too. The
    // disk is the test host's, shared with its builds: the kubelet's default thresholds
    // (imagefs.available 15 %, image GC above 85 % used) would put this node under disk
    // pressure (tainted, no pod scheduled) on a host merely full of build output, so the
    // thresholds are absolute, as every other test agent's are.
    format!(
        "{text}port: {port}\ncontainerRuntimeEndpoint: {}\npodLogsDir: {}\nfailCgroupV1: false\n{EVICTION}",
        common::endpoint(),
        dir.join("logs").display()
    )
}

/// The kubeadm-flags.env line, split as systemd splits it, naming this test's node.
fn kubeadm_flags(node: &str) -> Vec<String> {
    let line = KUBEADM_FLAGS
        .lines()
        .find_map(|l| l.strip_prefix("KUBELET_KUBEADM_ARGS="))
        .unwrap()
        .trim_matches('"')
        .replace("worker-1", node)
        .replace("192.0.2.10", "127.0.0.1");
    line.split_whitespace().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_as_kubeadm_starts_a_kubelet_joins_and_runs_a_pod() {
    let ports = (
        below_ephemeral().local_addr().unwrap().port(),
        below_ephemeral().local_addr().unwrap().port(),
    );
    let healthz = ports.1;
    let agent = Agent::start_flags("kubeadm", |dir, node| {
        let config = dir.join("config.yaml");
        std::fs::write(&config, kubelet_config(dir, ports)).unwrap();
        let mut args = vec![
            format!("--config={}", config.display()),
            format!(
                "--bootstrap-kubeconfig={}",
                common::cluster::bootstrap_kubeconfig().display()
            ),
            // Not there yet: the bootstrap kubeconfig is used, as a new kubeadm node's is.
            format!("--kubeconfig={}", dir.join("kubelet.conf").display()),
            format!("--root-dir={}", dir.join("state").display()),
        ];
        args.extend(kubeadm_flags(node));
        args
    })
    .await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    let label = admin.jsonpath(&["node", &node], "{.metadata.labels.example\\.com/pool}");
    assert_eq!(label, "blue", "--node-labels");
    let taint = admin.jsonpath(
        &["node", &node],
        "{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}",
    );
    assert_eq!(
        taint, "example.com/dedicated=infra:NoSchedule",
        "--register-with-taints"
    );
    let body = http_get(&format!("http://127.0.0.1:{healthz}/healthz")).await;
    assert_eq!(body, "ok", "/healthz where kubeadm asks");
    let log = agent.agent_log();
    assert!(
        log.contains("as the runtime says"),
        "the cgroup driver is the runtime's: {}",
        agent.log_tail(30)
    );

    // What monitoring reads of the node's :10250, as the API server's client (its node
    // proxy refuses a loopback node address, which this node has).
    let proxy = |path: &str| kubelet_get(ports.0, path);
    let configz: serde_json::Value = serde_json::from_str(&proxy("/configz")).unwrap();
    let driver = configz["kubeletconfig"]["cgroupDriver"].as_str();
    assert!(matches!(driver, Some("cgroupfs" | "systemd")), "{configz}");
    let metrics = proxy("/metrics");
    let ttl = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kubelet_certificate_manager_client_ttl_seconds "))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no client certificate TTL in:\n{metrics}"));
    assert!(
        ttl.is_finite() && ttl > 60.0,
        "the node's own certificate: {ttl}"
    );
    assert!(metrics.contains(&format!("kubelet_node_name{{node=\"{node}\"}} 1")));

    let tolerating = pod(&ns, "p", &node).replace(
        "nodeSelector:",
        "tolerations: [{key: example.com/dedicated, operator: Exists}]\n      nodeSelector:",
    );
    admin.apply(&tolerating);
    running(&admin, &ns, &node, 1).await;
    eventually("the pod's hostIP is --node-ip", MINUTE, || async {
        let ip = admin.jsonpath(&["pod", "p", "-n", &ns], "{.status.hostIP}");
        (ip == "127.0.0.1").then_some(())
    })
    .await;
    let cadvisor = proxy("/metrics/cadvisor");
    assert!(
        cadvisor
            .lines()
            .any(|l| l.starts_with("container_cpu_usage_seconds_total{")
                && l.contains("container=\"c\",")
                && l.contains(&format!("namespace=\"{ns}\""))),
        "{cadvisor}"
    );
}

/// A GET of the node's :10250 with the API server's kubelet-client certificate.
fn kubelet_get(port: u16, path: &str) -> String {
    let pki = common::cluster::admin_kubeconfig();
    let pki = pki.parent().unwrap();
    let cert = pki.join("apiserver-kubelet-client.crt");
    let key = pki.join("apiserver-kubelet-client.key");
    let out = std::process::Command::new("curl")
        .args(["-fsSk", "--max-time", "30", "--cert"])
        .arg(&cert)
        .arg("--key")
        .arg(&key)
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    common::succeeded(out)
}

/// A GET's body over plain HTTP (the health endpoint has no TLS, as the kubelet's).
async fn http_get(url: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-fsS", "--max-time", "5", url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}
