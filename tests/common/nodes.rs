//! Nodes of the test cluster for the cluster tests: joining one, its test namespace and
//! clean-up, and the pods and waits the tests share.

#![allow(dead_code)]

use std::time::Duration;

use super::agent::Agent;
use super::cluster;
use super::eventually;
use super::kubectl::Kubectl;

pub const MINUTE: Duration = Duration::from_secs(60);

/// A node of the test cluster, joined through `server` (the API server's, or a proxy's).
pub async fn join(name: &str, server: Option<&str>) -> Agent {
    let dir = std::env::temp_dir().join(format!("podvisor-join-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = match server {
        Some(s) => cluster::bootstrap_via(&dir, s),
        None => cluster::bootstrap_kubeconfig(),
    };
    let section = format!("[cluster]\nkubeconfig = \"{}\"\n", kubeconfig.display());
    Agent::start_with(name, &section).await
}

/// Removes the node's objects from the cluster when the test is done, passed or not.
pub struct Cleanup {
    pub admin: Kubectl,
    pub node: String,
    pub namespace: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let wait = "--wait=false";
        let _ = self
            .admin
            .run(&["delete", "namespace", &self.namespace, wait]);
        let _ = self.admin.run(&["delete", "node", &self.node, wait]);
    }
}

pub fn setup(agent: &Agent) -> (Kubectl, Cleanup) {
    let admin = cluster::admin();
    let namespace = format!("t-{}", agent.node);
    admin.ok(&["create", "namespace", &namespace]);
    let cleanup = Cleanup {
        admin: admin.clone(),
        node: agent.node.clone(),
        namespace,
    };
    (admin, cleanup)
}

pub async fn node_ready(admin: &Kubectl, node: &str) {
    let ready = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
    eventually("the node Ready in the cluster", MINUTE, || async {
        (admin.jsonpath(&["node", node], ready) == "True").then_some(())
    })
    .await;
}

/// A workload that stops at once on SIGTERM, pinned to `node` (with the service-account
/// token volume the cluster adds to every pod).
pub fn pod_spec(node: &str) -> String {
    format!(
        "nodeSelector: {{kubernetes.io/hostname: {node}}}
      terminationGracePeriodSeconds: 30
      containers:
      - name: c
        image: localhost/podvisor/busybox:test
        imagePullPolicy: Never
        command: [sh, -c, \"trap 'exit 0' TERM; sleep 86400 & wait\"]"
    )
}

pub fn deployment(ns: &str, node: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      {}
",
        pod_spec(node)
    )
}

pub fn pod(ns: &str, name: &str, node: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
      {}
",
        pod_spec(node)
    )
}

/// The pods of `ns` as `name phase node` lines.
pub fn pods(admin: &Kubectl, ns: &str) -> Vec<String> {
    let path = r#"{range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName}{"\n"}{end}"#;
    let out = admin.jsonpath(&["pods", "-n", ns], path);
    out.lines().map(str::to_string).collect()
}

/// Waits for `n` pods of `ns` Running on `node`; fails naming what the pods' conditions
/// and the node's say (a pressure taint keeps the scheduler away).
pub async fn running(admin: &Kubectl, ns: &str, node: &str, n: usize) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + MINUTE;
    loop {
        let p = pods(admin, ns);
        if p.len() == n && p.iter().all(|l| l.ends_with(&format!(" Running {node}"))) {
            return p;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "timed out after {MINUTE:?} waiting for {n} pods Running on {node}: {p:?}\n{}",
                why_not_running(admin, ns, node)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pods' condition messages, and the node's true conditions and taints.
fn why_not_running(admin: &Kubectl, ns: &str, node: &str) -> String {
    let pods = r#"{range .items[*]}{.metadata.name}: {.status.conditions[*].message}{"\n"}{end}"#;
    let conditions = r#"{range .status.conditions[?(@.status=="True")]}{.type} {end}"#;
    format!(
        "{}node conditions true: {}\nnode taints: {}",
        admin.jsonpath(&["pods", "-n", ns], pods),
        admin.jsonpath(&["node", node], conditions),
        admin.jsonpath(&["node", node], "{.spec.taints}")
    )
}

/// Containers of the agent's pods running in containerd now.
pub async fn running_containers(agent: &Agent) -> usize {
    let pods = agent.runtime_pods().await;
    let containers = pods.iter().flat_map(|p| &p.containers);
    containers
        .filter(|c| c.state == podvisor_cri::ContainerState::Running)
        .count()
}

/// A pod on `node` that tolerates `key` (NoExecute) for `seconds` (`None`: for ever; no
/// toleration at all when `key` is empty).
pub fn tolerating(ns: &str, name: &str, node: &str, key: &str, seconds: Option<u32>) -> String {
    let toleration = match (key, seconds) {
        ("", _) => String::new(),
        (k, Some(s)) => format!(
            "tolerations: [{{key: {k}, operator: Exists, effect: NoExecute, tolerationSeconds: {s}}}]"
        ),
        (k, None) => format!("tolerations: [{{key: {k}, operator: Exists, effect: NoExecute}}]"),
    };
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
      {toleration}
      {}
",
        pod_spec(node)
    )
}

pub fn names(admin: &Kubectl, ns: &str) -> Vec<String> {
    let p = pods(admin, ns);
    p.iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

/// A kubeconfig for the cluster as whoever holds `token` (written into `dir`).
pub fn token_kubeconfig(dir: &std::path::Path, token: &str) -> std::path::PathBuf {
    let admin: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(cluster::admin_kubeconfig()).unwrap())
            .unwrap();
    let c = &admin["clusters"][0]["cluster"];
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: {}, certificate-authority: {}}}}}]\nusers: [{{name: u, user: {{token: {token}}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n",
        c["server"].as_str().unwrap(),
        c["certificate-authority"].as_str().unwrap(),
    );
    let path = dir.join("token.kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}
