//! The taint eviction scheduler with 1,000 pending evictions, in process against a real
//! store (redb on disk) and no kubelet: 1,000 pods bound to the node tolerate a NoExecute
//! taint for 8 to 12 s; the taint goes on; then
//!
//! - the CPU the whole process uses while the 1,000 countdowns wait (nothing is due for the
//!   first 8 s; the goal is none between firings),
//! - how late each eviction's timer fired after its deadline (the scheduler's own
//!   histogram, from its debug summary),
//! - how late each pod was seen marked for deletion through a watch, after its deadline:
//!   the timer, the last look at the store, the condition and the graceful delete (each
//!   durable) and the watch, for 200 pods due in the same second.
//!
//! cargo run --release -p podvisor-bench --bin taint-bench [-- --dir DIR --pods N]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use podvisor_actors::supervisor::Escalation;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_bench::cpu::process_cpu;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_client::{Api, ListParams, PostParams, WatchEvent};
use podvisor_controllers::taint_eviction::TaintEviction;
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};
use serde_json::json;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "/var/tmp/podvisor-taint-bench")]
    dir: PathBuf,
    #[arg(long, default_value_t = 1000)]
    pods: usize,
}

const NODE: &str = "bench";

fn pod(i: usize) -> Pod {
    let seconds = 8 + (i % 5);
    serde_json::from_value(json!({"metadata": {"name": format!("p-{i:04}")}, "spec": {"nodeName": NODE,
        "tolerations": [{"key": "bench", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}],
        "containers": [{"name": "c", "image": "x:1"}]}}))
    .expect("a pod")
}

/// When the node's first taint was added, in milliseconds since the epoch.
fn added_ms(n: &Node) -> u64 {
    let taint = n
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref()?.first().cloned());
    let at = taint
        .and_then(|t| t.time_added)
        .map(|t| t.0.as_millisecond());
    u64::try_from(at.unwrap_or(0)).unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    actix::System::new().block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let cfg = StoreConfig {
        path: args.dir.join("store.redb"),
        window: 100_000,
    };
    let registry = Registry::new();
    let (store, store_spec) = ChildSpec::of(move || StoreActor::new(cfg.clone(), 100_000))
        .capacity(1 << 14)
        .build();
    let client = LocalClient::client(&store);
    let reporter = Reporter {
        component: "taint-eviction-controller".into(),
        host: NODE.into(),
    };
    let events_api = Api::all(client.clone());
    let (events, events_spec) =
        ChildSpec::of(move || EventRecorder::new(reporter.clone(), events_api.clone())).build();
    let c = client.clone();
    let (_, taints_spec) =
        ChildSpec::of(move || TaintEviction::new(NODE.into(), c.clone(), events.recipient()))
            .capacity(1 << 14)
            .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![store_spec, events_spec, taints_spec],
        Escalation::exit_process,
    );

    let pp = PostParams::default();
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": NODE}, "spec": {}}))?;
    nodes.create(&pp, node).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for i in 0..args.pods {
        pods.create(&pp, pod(i)).await?;
    }
    let bound = ListParams::default().field_equals("spec.nodeName", NODE);
    let version = pods.list(&bound).await?.resource_version;
    let mut watch = pods.watch(&bound, &version).await?;

    let mut node = (*nodes.get(NODE).await?).clone();
    node.spec = Some(serde_json::from_value(
        json!({"taints": [{"key": "bench", "effect": "NoExecute"}]}),
    )?);
    let tainted = nodes.replace(&pp, node).await?;
    let added = added_ms(&tainted);
    let t_taint = Instant::now();

    // The quiet wait: 1,000 countdowns, the first due 8 s after the taint's second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu0 = process_cpu();
    let w0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (idle_cpu, idle_wall) = (process_cpu() - cpu0, w0.elapsed());

    let mut marked = Samples::new();
    let mut seen = std::collections::HashSet::new();
    while seen.len() < args.pods && t_taint.elapsed() < Duration::from_secs(60) {
        let Some(Ok(WatchEvent::Modified(p))) = watch.next().await else {
            continue;
        };
        let name = p.metadata.name.clone().unwrap_or_default();
        if p.metadata.deletion_timestamp.is_none() || !seen.insert(name) {
            continue;
        }
        let now = podvisor_core::time::now_unix_ms();
        let tolerations = p.spec.as_ref().and_then(|s| s.tolerations.as_ref());
        let seconds = tolerations
            .and_then(|t| t.first()?.toleration_seconds)
            .map_or(0, |s| u64::try_from(s).unwrap_or(0));
        let due = added + seconds * 1000;
        marked.push(Duration::from_millis(now.saturating_sub(due)));
    }
    let summary = registry
        .tree(0, 100)
        .actors
        .into_iter()
        .find(|a| a.kind == "taint-eviction")
        .and_then(|a| a.state);
    println!(
        "# taint-bench: {} pending evictions, {} evicted\n",
        args.pods,
        seen.len()
    );
    println!("{}", Summary::HEADER);
    println!(
        "{}",
        marked
            .summary()
            .row("deadline → pod marked for deletion, seen in a watch")
    );
    println!(
        "\nthe scheduler's own timer lateness (its summary): {}",
        summary
            .map(|s| s["lateness"].to_string())
            .unwrap_or_default()
    );
    println!(
        "CPU of the whole process while {} countdowns wait: {:.1} ms in {:.1} s ({:.3} % of a core)",
        args.pods,
        idle_cpu.as_secs_f64() * 1e3,
        idle_wall.as_secs_f64(),
        idle_cpu.as_secs_f64() / idle_wall.as_secs_f64() * 100.0
    );
    let _ = std::fs::remove_dir_all(&args.dir);
    Ok(())
}
