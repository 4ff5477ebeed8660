//! Port-forward throughput: a pod serving a file of `--mib` MiB (busybox httpd) is fetched
//! whole `--transfers` times over each path, for podvisor and for the real kubelet as
//! nodes of one real cluster, one node at a time against the same containerd:
//! - direct TCP to the pod's IP (the floor: no forwarding);
//! - the runtime's own stream server (CRI PortForward's URL over WebSocket): containerd's
//!   forwarding alone, the path podvisor and the kubelet proxy to;
//! - `kubectl port-forward` through the API server to the node's :10250 (apiserver →
//!   node agent → containerd → pod), the path a user takes.
//!
//! scripts/cluster-up && PODVISOR_CONTAINERD_VERSION=2.1 scripts/containerd-up
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin forward-bench
//! target/release/forward-bench --endpoint unix:///var/lib/podvisor-containerd-2.1/containerd.sock

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use podvisor_bench::fetch::{forward_get, tcp_get};
use podvisor_bench::nodes::{NodeArgs, NodeKind, NodeProc, NodeSetup, node_ready};
use podvisor_bench::procstat;
use podvisor_bench::stats::{Samples, ms};
use podvisor_client::{Api, Client, DeleteParams, PostParams};
use podvisor_cri::{CriRuntime, Runtime, StreamRequest, Timeouts};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    #[command(flatten)]
    nodes: NodeArgs,
    /// The size of the file fetched, MiB.
    #[arg(long, default_value_t = 64)]
    mib: usize,
    /// Fetches over each path, per round.
    #[arg(long, default_value_t = 10)]
    transfers: usize,
    /// Rounds, each node in turn (podvisor, kubelet, podvisor, ...): a slow spell of the
    /// machine then falls on both.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
}

const IMAGE: &str = "localhost/podvisor/busybox:test";
const PORT: u16 = 8080;
const FILE: &str = "/big";

/// Per node: each path's time for one whole fetch.
struct Paths {
    direct: Samples,
    runtime: Samples,
    kubectl: Samples,
    /// The node agent's CPU time over the kubectl fetches, per fetch.
    agent_cpu: Duration,
}

impl Paths {
    fn merge(&mut self, other: Paths) {
        let n = self.kubectl.len() as u32;
        let m = other.kubectl.len() as u32;
        self.agent_cpu = (self.agent_cpu * n + other.agent_cpu * m) / (n + m).max(1);
        for (to, from) in [
            (&mut self.direct, other.direct),
            (&mut self.runtime, other.runtime),
            (&mut self.kubectl, other.kubectl),
        ] {
            from.iter().for_each(|d| to.push(*d));
        }
    }
}

fn server(node: &str, mib: usize) -> Pod {
    let command = format!(
        "mkdir -p /www && head -c {} /dev/urandom > /www{FILE} && exec httpd -f -p {PORT} -h /www",
        mib << 20
    );
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"nodeName": node, "automountServiceAccountToken": false,
                 "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "httpd", "image": IMAGE, "imagePullPolicy": "Never",
                                 "command": ["sh", "-c", command],
                                 "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1}}]}
    }))
    .expect("a pod")
}

/// The pod's IP and UID once it is Ready.
async fn ready(pods: &Api<Pod>) -> anyhow::Result<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p = pods.get("web").await?;
        let status = p.status.clone().unwrap_or_default();
        let is_ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if let (true, Some(ip), Some(uid)) = (is_ready, status.pod_ip, p.metadata.uid.clone()) {
            return Ok((ip, uid));
        }
        anyhow::ensure!(Instant::now() < deadline, "the server pod not Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `n` timed fetches of the whole file; each must bring `bytes`.
async fn timed<F, Fut>(n: usize, bytes: usize, mut fetch: F) -> anyhow::Result<Samples>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<usize>>,
{
    let mut s = Samples::new();
    for _ in 0..n {
        let t0 = Instant::now();
        let got = fetch().await?;
        anyhow::ensure!(got == bytes, "fetched {got} bytes, not {bytes}");
        s.push(t0.elapsed());
    }
    Ok(s)
}

/// `kubectl port-forward pod/web :PORT` as the admin: the child and its local port.
fn kubectl_forward(kubeconfig: &std::path::Path, ns: &str) -> anyhow::Result<(ForwardProc, u16)> {
    use std::io::BufRead;
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let mut child = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["-n", ns, "port-forward", "pod/web", &format!(":{PORT}")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()?;
    let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line)?;
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    // "Forwarding from 127.0.0.1:NNNNN -> 8080"
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("kubectl port-forward said {line:?}"))?;
    Ok((ForwardProc(child), port))
}

/// A `kubectl port-forward`, killed when dropped.
struct ForwardProc(std::process::Child);

impl Drop for ForwardProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One node's measurements; the node, its namespace and its Node object are removed
/// afterwards, measured or failed (a Node left NotReady would disturb the cluster's zone).
async fn run_node(
    kind: NodeKind,
    setup: &NodeSetup,
    (client, admin): (&Client, &std::path::Path),
    rt: &CriRuntime,
    args: &Args,
) -> anyhow::Result<Paths> {
    let node = NodeProc::start(kind, setup)?;
    let name = node.name.clone();
    let r = measure(&node, (client, admin), rt, args).await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
    node.stop();
    let _ = Api::<Node>::all(client.clone())
        .delete(&name, &DeleteParams::default())
        .await;
    r
}

async fn measure(
    node: &NodeProc,
    (client, admin): (&Client, &std::path::Path),
    rt: &CriRuntime,
    args: &Args,
) -> anyhow::Result<Paths> {
    node_ready(client, &node.name).await?;
    let ns = node.name.clone();
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.clone());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), n)
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), server(&node.name, args.mib))
        .await?;
    let (ip, uid) = ready(&pods).await?;
    let bytes = args.mib << 20;
    let n = args.transfers;
    let addr = format!("{ip}:{PORT}");
    let direct = timed(n, bytes, || tcp_get(&addr, FILE))
        .await
        .context("direct TCP")?;
    let status = rt.pod_status(&uid).await?;
    let sandbox = status.sandboxes.first().map(|s| s.id.clone());
    let sandbox = sandbox.ok_or_else(|| anyhow::anyhow!("no sandbox for {uid}"))?;
    let runtime = timed(n, bytes, || async {
        let request = StreamRequest::PortForward {
            sandbox_id: sandbox.clone(),
            ports: vec![PORT],
        };
        let url = rt.stream_url(&request).await?;
        forward_get(&url, PORT, FILE).await
    })
    .await
    .context("containerd's stream")?;
    let (forward, port) = kubectl_forward(admin, &ns)?;
    let local = format!("127.0.0.1:{port}");
    let cpu0 = procstat::cpu_time(node.pid())?;
    let kubectl = timed(n, bytes, || tcp_get(&local, FILE))
        .await
        .context("kubectl port-forward")?;
    let agent_cpu = (procstat::cpu_time(node.pid())? - cpu0) / n.max(1) as u32;
    drop(forward);
    Ok(Paths {
        direct,
        runtime,
        kubectl,
        agent_cpu,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let setup = args.nodes.setup(&args.agent, &args.runtime)?;
    let client = args.nodes.admin().await?;
    let admin = args.nodes.admin_kubeconfig();
    let rt = CriRuntime::new(&args.runtime.endpoint, Timeouts::default())?;
    let v = rt.version().await?;
    println!(
        "# forward-bench: {} {}, {} MiB ×{} per path and round, {} rounds\n",
        v.runtime_name, v.runtime_version, args.mib, args.transfers, args.rounds
    );
    let mut all: Vec<(NodeKind, Paths)> = Vec::new();
    for _ in 0..args.rounds {
        for kind in [NodeKind::Podvisor, NodeKind::Kubelet] {
            let paths = run_node(kind, &setup, (&client, &admin), &rt, &args).await?;
            match all.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, p)) => p.merge(paths),
                None => all.push((kind, paths)),
            }
        }
    }
    report(args.mib, &all);
    Ok(())
}

fn report(mib: usize, all: &[(NodeKind, Paths)]) {
    println!("| node | path | n | p50 ms | p99 ms | MiB/s at p50 | MiB/s at p99 |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let rate = |d: Duration| mib as f64 / d.as_secs_f64();
    for (kind, p) in all {
        for (path, s) in [
            ("direct TCP to the pod (floor)", &p.direct),
            ("containerd's stream (CRI PortForward URL)", &p.runtime),
            ("kubectl port-forward via the API server", &p.kubectl),
        ] {
            let s = s.summary();
            println!(
                "| {} | {path} | {} | {} | {} | {:.0} | {:.0} |",
                kind.label(),
                s.n,
                ms(s.p50),
                ms(s.p99),
                rate(s.p50),
                rate(s.p99)
            );
        }
    }
    println!(
        "\n| node | the node agent's CPU per {mib} MiB through kubectl port-forward |\n|---|---:|"
    );
    for (kind, p) in all {
        println!("| {} | {} ms |", kind.label(), ms(p.agent_cpu));
    }
}
