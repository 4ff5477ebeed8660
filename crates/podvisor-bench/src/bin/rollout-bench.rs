//! A rolling update of one Deployment, side by side in one run: podvisor standing alone
//! (its own Deployment and ReplicaSet controllers) and the same rollout on a real cluster
//! (`scripts/cluster-up`'s kube-controller-manager) with its pods on a kubelet node, then on
//! a podvisor node, each against the same containerd. The template's image alternates
//! between two names of one image; pods are ready at their first readiness probe (every
//! second; `--probe exec` runs `true` in the container, `--probe http` asks busybox's
//! httpd), so the rollout is paced by the controllers and the nodes, not by the image.
//! `--strategy recreate` rolls with Recreate instead.
//!
//! For each rollout: the time from the patch until the Deployment is complete (observed,
//! every replica updated and available, no old one left: what `kubectl rollout status`
//! waits for), how many pods it created, and the most pods alive at once (polled every
//! 100 ms); and where the time went: while some new pod was starting, or while every new
//! pod was ready and the next step was the controllers' (status to propagate, a scale to
//! write, a pod to create), with each new pod's time to run and then to be ready.
//!
//! scripts/cluster-up && PODVISOR_CONTAINERD_VERSION=2.1 scripts/containerd-up
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin rollout-bench
//! target/release/rollout-bench --endpoint unix:///var/lib/podvisor-containerd-2.1/containerd.sock

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use podvisor_bench::agent::BenchAgent;
use podvisor_bench::nodes::{NodeArgs, NodeKind, NodeProc, node_ready};
use podvisor_bench::stats::{Samples, Summary, ms};
use podvisor_client::{Api, Client, DeleteParams, ListParams, Patch, PostParams};
use serde_json::json;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    #[command(flatten)]
    nodes: NodeArgs,
    #[arg(long, default_value_t = 20)]
    replicas: i32,
    /// Rollouts per side (the image flips each time).
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// The readiness probe: `exec` (`true` in the container: a process the runtime spawns
    /// per pod every second) or `http` (a GET to busybox's httpd, made by the node itself).
    #[arg(long, value_enum, default_value_t = Probe::Exec)]
    probe: Probe,
    /// The Deployment's strategy: `rolling` (25 % surge, 25 % unavailable) or `recreate`
    /// (every old pod stopped before the first new one is made).
    #[arg(long, value_enum, default_value_t = Strategy::Rolling)]
    strategy: Strategy,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Strategy {
    Rolling,
    Recreate,
}

impl Strategy {
    fn spec(self) -> serde_json::Value {
        match self {
            Strategy::Rolling => json!({"type": "RollingUpdate"}),
            Strategy::Recreate => json!({"type": "Recreate"}),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Strategy::Rolling => "a rolling update (25 % surge, 25 % unavailable)",
            Strategy::Recreate => "a Recreate rollout",
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Probe {
    Exec,
    Http,
}

impl Probe {
    /// The container's command and its readiness probe.
    fn container(self) -> (serde_json::Value, serde_json::Value) {
        match self {
            Probe::Exec => (
                json!(["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"]),
                json!({"exec": {"command": ["true"]}, "periodSeconds": 1}),
            ),
            Probe::Http => (
                json!([
                    "/bin/sh",
                    "-c",
                    "mkdir -p /www && echo ok > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"
                ]),
                json!({"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}),
            ),
        }
    }
}

const IMAGES: [&str; 2] = [
    "localhost/podvisor/busybox:test",
    "localhost/podvisor/busybox:v2",
];

fn deployment(args: &Args, node: Option<&str>) -> Deployment {
    let (command, readiness) = args.probe.container();
    serde_json::from_value(json!({
        "metadata": {"name": "roll"},
        "spec": {"replicas": args.replicas, "strategy": args.strategy.spec(),
            "selector": {"matchLabels": {"app": "roll"}},
            "template": {"metadata": {"labels": {"app": "roll"}}, "spec": {
                "nodeName": node, "automountServiceAccountToken": false,
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "main", "image": IMAGES[0],
                    "command": command, "readinessProbe": readiness}]}}}}))
    .expect("a Deployment")
}

/// Complete as `kubectl rollout status` sees it.
fn complete(d: &Deployment, replicas: i32) -> bool {
    let s = d.status.clone().unwrap_or_default();
    s.observed_generation >= d.metadata.generation
        && s.updated_replicas == Some(replicas)
        && s.replicas == Some(replicas)
        && s.available_replicas == Some(replicas)
}

struct Side {
    label: String,
    took: Samples,
    created: Vec<usize>,
    peak: Vec<usize>,
    /// Of each rollout, the time some new pod was alive and not yet ready.
    starting: Samples,
    /// Of each rollout, the time every new pod was ready: the controllers' turn.
    waiting: Samples,
    /// Per new pod, from its first listing until its container ran, then until ready.
    to_running: Samples,
    to_ready: Samples,
}

/// What the listings of one rollout showed, every 100 ms.
#[derive(Default)]
struct Watch {
    seen: BTreeMap<String, Instant>,
    running: BTreeMap<String, Instant>,
    ready: BTreeSet<String>,
    peak: usize,
    starting: Duration,
    waiting: Duration,
}

impl Watch {
    /// Takes in one listing, `since` the previous one, counting the time between them to
    /// the starting pods or to the controllers by what this listing shows.
    fn observe(
        &mut self,
        pods: &[Arc<Pod>],
        before: &BTreeSet<String>,
        since: Duration,
        side: &mut Side,
    ) {
        let now = Instant::now();
        let alive = |p: &&Arc<Pod>| p.metadata.deletion_timestamp.is_none();
        self.peak = self.peak.max(pods.iter().filter(alive).count());
        let mut starting = false;
        for p in pods {
            let Some(name) = p.metadata.name.clone().filter(|n| !before.contains(n)) else {
                continue;
            };
            // Counted as created even if first listed already being deleted.
            let seen = *self.seen.entry(name.clone()).or_insert(now);
            if !alive(&p) {
                continue;
            }
            if container_running(p) && !self.running.contains_key(&name) {
                self.running.insert(name.clone(), now);
                side.to_running.push(now - seen);
            }
            if pod_ready(p) {
                if self.ready.insert(name.clone()) {
                    let ran = self.running.get(&name).copied().unwrap_or(now);
                    side.to_ready.push(now - ran);
                }
            } else {
                starting = true;
            }
        }
        if starting {
            self.starting += since;
        } else {
            self.waiting += since;
        }
    }
}

fn container_running(p: &Pod) -> bool {
    let statuses = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    statuses.is_some_and(|cs| {
        cs.iter()
            .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    })
}

fn pod_ready(p: &Pod) -> bool {
    let conditions = p.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn wait_complete(
    deployments: &Api<Deployment>,
    replicas: i32,
    limit: Duration,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if complete(&*deployments.get("roll").await?, replicas) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the Deployment did not complete in {limit:?}")
}

/// Rolls the Deployment `rounds` times, measuring each.
async fn roll(
    client: &Client,
    ns: &str,
    label: &str,
    args: &Args,
    node: Option<&str>,
) -> anyhow::Result<Side> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    deployments
        .create(&PostParams::default(), deployment(args, node))
        .await?;
    wait_complete(&deployments, args.replicas, Duration::from_secs(300)).await?;
    let mut side = Side {
        label: label.to_string(),
        took: Samples::new(),
        created: Vec::new(),
        peak: Vec::new(),
        starting: Samples::new(),
        waiting: Samples::new(),
        to_running: Samples::new(),
        to_ready: Samples::new(),
    };
    let lp =
        ListParams::default().labels(podvisor_client::selector::LabelSelector::parse("app=roll")?);
    for round in 0..args.rounds {
        let before: BTreeSet<String> = pods
            .list(&lp)
            .await?
            .items
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        let image = IMAGES[(round + 1) % 2];
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}});
        let t0 = Instant::now();
        deployments
            .patch("roll", &PostParams::default(), &Patch::Strategic(patch))
            .await?;
        let (mut watch, mut last) = (Watch::default(), t0);
        loop {
            let list = pods.list(&lp).await?;
            watch.observe(&list.items, &before, last.elapsed(), &mut side);
            last = Instant::now();
            if complete(&*deployments.get("roll").await?, args.replicas) {
                break;
            }
            anyhow::ensure!(
                t0.elapsed() < Duration::from_secs(600),
                "{label}: rollout {round} never completed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        side.took.push(t0.elapsed());
        side.created.push(watch.seen.len());
        side.peak.push(watch.peak);
        side.starting.push(watch.starting);
        side.waiting.push(watch.waiting + last.elapsed());
        // The old pods' deletion settles before the next round.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    deployments.delete("roll", &DeleteParams::default()).await?;
    Ok(side)
}

async fn standalone(args: &Args) -> anyhow::Result<Side> {
    let agent = BenchAgent::start(
        &args.agent.binary()?,
        "rollout-bench",
        "rollout-standalone",
        &args.runtime.endpoint,
        "",
        "info",
    )?;
    agent.api().await?;
    let remote =
        podvisor_cluster::RemoteClient::from_kubeconfig(&agent.dir.join("state/kubeconfig"))
            .await?;
    let client = Client::new(remote);
    let side = roll(&client, "default", "podvisor standalone", args, None).await;
    let rt =
        podvisor_cri::CriRuntime::new(&args.runtime.endpoint, podvisor_cri::Timeouts::default())?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let lp =
        ListParams::default().labels(podvisor_client::selector::LabelSelector::parse("app=roll")?);
    let t0 = Instant::now();
    while !pods.list(&lp).await?.items.is_empty() && t0.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    agent.clear(&rt).await?;
    side
}

async fn in_cluster(kind: NodeKind, args: &Args, admin: &Client) -> anyhow::Result<Side> {
    let setup = args.nodes.setup(&args.agent, &args.runtime)?;
    let node = NodeProc::start(kind, &setup)?;
    let name = node.name.clone();
    let label = format!("cluster, {} node", kind.label());
    let result = async {
        node_ready(admin, &name).await?;
        let namespaces: Api<Namespace> = Api::all(admin.clone());
        let mut n = Namespace::default();
        n.metadata.name = Some(name.clone());
        namespaces.create(&PostParams::default(), n).await?;
        let side = roll(admin, &name, &label, args, Some(&name)).await?;
        namespaces.delete(&name, &DeleteParams::default()).await?;
        let t0 = Instant::now();
        while namespaces.get_opt(&name).await?.is_some() && t0.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok::<_, anyhow::Error>(side)
    }
    .await;
    node.stop();
    let _ = Api::<Node>::all(admin.clone())
        .delete(&name, &DeleteParams::default())
        .await;
    result
}

fn report(args: &Args, sides: &[Side]) {
    println!(
        "## {} of {} replicas, ×{} per side\n",
        args.strategy.title(),
        args.replicas,
        args.rounds
    );
    println!("{}", Summary::HEADER);
    for s in sides {
        println!("{}", s.took.summary().row(&s.label));
    }
    println!("\n| side | pods created per rollout | most pods alive at once |\n|---|---|---|");
    for s in sides {
        println!("| {} | {:?} | {:?} |", s.label, s.created, s.peak);
    }
    println!(
        "\nWhere a rollout's time goes (p50 per rollout, ms): while some new pod was not yet \
         ready, or while all were and the controllers had the next step to take; and per new \
         pod (p50 / p99, ms, from listings every 100 ms): first listed until its container \
         ran, then until it was ready.\n"
    );
    println!(
        "| side | new pods starting | controllers | listed → running | running → ready |\n|---|---:|---:|---:|---:|"
    );
    for s in sides {
        let (run, ready) = (s.to_running.summary(), s.to_ready.summary());
        println!(
            "| {} | {} | {} | {} / {} | {} / {} |",
            s.label,
            ms(s.starting.summary().p50),
            ms(s.waiting.summary().p50),
            ms(run.p50),
            ms(run.p99),
            ms(ready.p50),
            ms(ready.p99)
        );
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let admin = args.nodes.admin().await?;
    println!(
        "# rollout-bench: {} replicas, {} rounds per side, {} readiness probe\n",
        args.replicas,
        args.rounds,
        match args.probe {
            Probe::Exec => "exec",
            Probe::Http => "HTTP",
        }
    );
    let mut sides = vec![standalone(&args).await?];
    for kind in [NodeKind::Kubelet, NodeKind::Podvisor] {
        sides.push(in_cluster(kind, &args, &admin).await?);
    }
    report(&args, &sides);
    Ok(())
}
