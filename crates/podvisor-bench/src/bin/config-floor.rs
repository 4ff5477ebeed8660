//! The runtime's floor for the pod each node really asks for. node-bench compares a node's
//! one-pod start with a raw CRI start of a minimal pod (`podvisor_cri::sample`); a node's
//! pod carries more (a cgroup parent, DNS, mounts for /etc/hosts and the termination log,
//! resources, a security context, an environment), and the runtime may take longer for it.
//!
//! Each node (podvisor, then the kubelet) joins the cluster with its runtime calls passing
//! through `podvisor-cri-proxy`, starts node-bench's pod, and is stopped; the RunPodSandbox
//! and CreateContainer requests it sent are then started again raw, under new names,
//! `--runs` times each, round robin with the minimal floor, 500 ms apart on a quiet runtime:
//! as sent, and (podvisor's) with one part left out at a time, so each part's cost shows.
//!
//! scripts/cluster-up && PODVISOR_CONTAINERD_VERSION=2.1 scripts/containerd-up
//! target/release/config-floor --endpoint unix:///var/lib/podvisor-containerd-2.1/containerd.sock

use std::time::{Duration, Instant};

use clap::Parser;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use podvisor_bench::floor::{self, PodStart};
use podvisor_bench::nodes::{NodeArgs, NodeKind, NodeProc, NodeSetup, node_ready};
use podvisor_bench::replay::{Recorded, Variant};
use podvisor_bench::stats::{Samples, Summary};
use podvisor_client::{Api, Client, DeleteParams, PostParams};
use podvisor_cri::{CriClient, Timeouts};
use podvisor_cri_proxy::CriProxy;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    #[command(flatten)]
    nodes: NodeArgs,
    /// Starts of each kind, one at a time.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Pods started at once, with the agent's default bound on calls in flight (0: none).
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Bursts of each kind (minimal, each node's configs as sent), round robin.
    #[arg(long, default_value_t = 2)]
    bursts: usize,
}

/// node-bench's one-pod spec.
fn pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "automountServiceAccountToken": false,
                 "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                 "containers": [{"name": "c", "image": podvisor_cri::sample::TEST_IMAGE,
                                 "imagePullPolicy": "Never",
                                 "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"]}]}
    }))
    .expect("a pod")
}

fn ready(p: &Pod) -> bool {
    let s = p.status.clone().unwrap_or_default();
    s.phase.as_deref() == Some("Running")
        && s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// A node joins through a proxy, starts node-bench's pod and is stopped; its pod's
/// configs. The node's name (also its namespace's) goes to `started`, for [`clean`].
async fn record(
    kind: NodeKind,
    setup: &NodeSetup,
    client: &Client,
    started: &mut Vec<String>,
) -> anyhow::Result<Recorded> {
    let socket = std::env::temp_dir().join(format!("config-floor-{}.sock", kind.label()));
    let proxy = CriProxy::start(&setup.endpoint, &socket).await?;
    let mut through = setup.clone();
    through.endpoint = proxy.endpoint();
    let node = NodeProc::start(kind, &through)?;
    let ns = node.name.clone();
    started.push(ns.clone());
    node_ready(client, &ns).await?;
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.clone());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), n)
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let t0 = Instant::now();
    let created = pods.create(&PostParams::default(), pod("s-0", &ns)).await?;
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let deadline = t0 + Duration::from_secs(60);
    while !ready(&*pods.get("s-0").await?) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} never ran its pod",
            kind.label()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    node.stop();
    Recorded::from_calls(&proxy.calls_since(t0), &uid)
        .ok_or_else(|| anyhow::anyhow!("{} sent no configs for pod {uid}", kind.label()))
}

/// Removes a node's namespace, Node and runtime pods.
async fn clean(client: &Client, cri: &CriClient, ns: &str) {
    let now = DeleteParams {
        grace_seconds: Some(0),
        ..DeleteParams::default()
    };
    let _ = Api::<Pod>::namespaced(client.clone(), ns)
        .delete("s-0", &now)
        .await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(ns, &DeleteParams::default())
        .await;
    let _ = Api::<Node>::all(client.clone())
        .delete(ns, &DeleteParams::default())
        .await;
    for s in cri.list_pod_sandbox(None).await.unwrap_or_default() {
        let in_ns = s
            .labels
            .get(podvisor_cri::labels::POD_NAMESPACE)
            .is_some_and(|n| n == ns);
        if in_ns {
            let _ = cri.stop_pod_sandbox(&s.id).await;
            let _ = cri.remove_pod_sandbox(&s.id).await;
        }
    }
}

/// What is started: the minimal floor, or a node's configs.
enum Case {
    Minimal,
    Node(Box<Recorded>),
}

struct Row {
    label: String,
    case: Case,
    sandbox: Samples,
    container: Samples,
    total: Samples,
    /// Whether it also starts `--batch` at once (the minimal pod, each node's as sent).
    in_burst: bool,
    burst: Vec<Duration>,
}

async fn start(cri: &CriClient, case: &Case, i: usize, k: usize) -> anyhow::Result<PodStart> {
    let logs = std::env::temp_dir().join("config-floor-logs");
    let uid = format!("config-floor-{}-{k}-{i}", std::process::id());
    let (pod, took) = match case {
        Case::Minimal => {
            std::fs::create_dir_all(&logs)?;
            floor::start_pod(cri, &uid, false, &logs.to_string_lossy()).await?
        }
        Case::Node(r) => {
            r.renamed(&uid, &format!("replay-{k}-{i}"))
                .start(cri)
                .await?
        }
    };
    floor::teardown_pod(cri, &pod).await?;
    Ok(took)
}

async fn measure(cri: &CriClient, rows: &mut [Row], runs: usize) -> anyhow::Result<()> {
    for i in 0..runs {
        for (k, row) in rows.iter_mut().enumerate() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let took = start(cri, &row.case, i, k).await?;
            row.sandbox.push(took.sandbox);
            row.container.push(took.container);
            row.total.push(took.total());
        }
        eprintln!("config-floor: round {} of {runs}", i + 1);
    }
    Ok(())
}

/// `n` pods of `case` at once, torn down after: until the last one ran.
async fn burst(cri: &CriClient, case: &Case, n: usize, k: usize) -> anyhow::Result<Duration> {
    let logs = std::env::temp_dir().join("config-floor-logs");
    std::fs::create_dir_all(&logs)?;
    let logs = logs.to_string_lossy().into_owned();
    let bound = podvisor_cri::client::default_mutations();
    let prefix = format!("config-floor-burst-{}-{k}", std::process::id());
    let (pods, took) = match case {
        Case::Minimal => floor::start_pods_parallel(cri, &prefix, n, bound, false, &logs).await?,
        Case::Node(r) => {
            floor::start_parallel(cri, n, bound, |i| {
                let pod = r.renamed(&format!("{prefix}-{i}"), &format!("burst-{k}-{i}"));
                async move { pod.start(cri).await }
            })
            .await?
        }
    };
    floor::teardown_parallel(cri, &pods, bound).await?;
    Ok(took)
}

/// Each row's burst of `n`, `times` times round robin, 5 s apart.
async fn bursts(cri: &CriClient, rows: &mut [Row], n: usize, times: usize) -> anyhow::Result<()> {
    for _ in 0..times {
        for (k, row) in rows.iter_mut().enumerate().filter(|(_, r)| r.in_burst) {
            tokio::time::sleep(Duration::from_secs(5)).await;
            row.burst.push(burst(cri, &row.case, n, k).await?);
        }
    }
    Ok(())
}

fn print(rows: &[Row]) {
    for (title, part) in [
        ("RunPodSandbox + CreateContainer + StartContainer", 0),
        ("RunPodSandbox", 1),
        ("CreateContainer + StartContainer", 2),
    ] {
        println!("## {title}\n\n{}", Summary::HEADER);
        for r in rows {
            let s = [&r.total, &r.sandbox, &r.container][part];
            println!("{}", s.summary().row(&r.label));
        }
        println!();
    }
    let bound = podvisor_cri::client::default_mutations();
    for r in rows.iter().filter(|r| !r.burst.is_empty()) {
        let each: Vec<String> = r
            .burst
            .iter()
            .map(|d| format!("{:.2} s", d.as_secs_f64()))
            .collect();
        println!(
            "{}: {bound} in flight, the last running after {}",
            r.label,
            each.join(", ")
        );
    }
}

fn row(label: String, case: Case, in_burst: bool) -> Row {
    Row {
        in_burst,
        label,
        case,
        sandbox: Samples::new(),
        container: Samples::new(),
        total: Samples::new(),
        burst: Vec::new(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let setup = args.nodes.setup(&args.agent, &args.runtime)?;
    let client = args.nodes.admin().await?;
    let cri = CriClient::new(&args.runtime.endpoint, Timeouts::default())?;
    let mut rows = vec![row(
        "minimal pod (node-bench's floor)".into(),
        Case::Minimal,
        true,
    )];
    let mut namespaces = Vec::new();
    for kind in [NodeKind::Podvisor, NodeKind::Kubelet] {
        let recorded = match record(kind, &setup, &client, &mut namespaces).await {
            Ok(r) => r,
            Err(e) => {
                for ns in &namespaces {
                    clean(&client, &cri, ns).await;
                }
                return Err(e);
            }
        };
        eprintln!("config-floor: {}'s configs: {recorded:#?}", kind.label());
        let variants: &[Variant] = match kind {
            NodeKind::Podvisor => &Variant::ALL,
            NodeKind::Kubelet => &[Variant::AsSent],
        };
        for v in variants {
            let label = format!("{}'s pod, {}", kind.label(), v.label());
            let in_burst = *v == Variant::AsSent;
            rows.push(row(
                label,
                Case::Node(Box::new(v.apply(&recorded))),
                in_burst,
            ));
        }
    }
    let mut result = measure(&cri, &mut rows, args.runs).await;
    if result.is_ok() && args.batch > 0 {
        result = bursts(&cri, &mut rows, args.batch, args.bursts).await;
    }
    for ns in &namespaces {
        clean(&client, &cri, ns).await;
    }
    result?;
    print(&rows);
    Ok(())
}
