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
use podvisor_actors::supervisor::Escalation;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_bench::cpu::process_cpu;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_controllers::taint_eviction::{StoreHandles, TaintEviction};
use podvisor_core::Kind;
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_machinery::reflector::Source;
use podvisor_store::actor::{Create, Get, Update, Watch, WatchEvent};
use podvisor_store::{FieldSelector, Resource, Selector, StoreActor, StoreConfig, WriteOptions};
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "/var/tmp/podvisor-taint-bench")]
    dir: PathBuf,
    #[arg(long, default_value_t = 1000)]
    pods: usize,
}

const NODE: &str = "bench";

fn pod(i: usize) -> Create {
    let seconds = 8 + (i % 5);
    Create {
        resource: Resource::of(Kind::Pod),
        namespace: Some("default".into()),
        body: json!({"metadata": {"name": format!("p-{i:04}")}, "spec": {"nodeName": NODE,
            "tolerations": [{"key": "bench", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}],
            "containers": [{"name": "c", "image": "x:1"}]}}),
        opts: WriteOptions::default(),
    }
}

fn wall_ms(t: &Value) -> u64 {
    let ts: k8s_openapi::jiff::Timestamp = t.as_str().unwrap_or("").parse().unwrap();
    ts.as_millisecond() as u64
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
    let s = store.clone();
    let reporter = Reporter {
        component: "taint-eviction-controller".into(),
        host: NODE.into(),
    };
    let (events, events_spec) =
        ChildSpec::of(move || EventRecorder::new(reporter.clone(), s.recipient(), s.recipient()))
            .build();
    let s = store.clone();
    let (_, taints_spec) = ChildSpec::of(move || {
        let source = Source::of(&s);
        let handles = StoreHandles::of(&s);
        TaintEviction::new(NODE.into(), source, handles, events.recipient())
    })
    .capacity(1 << 14)
    .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![store_spec, events_spec, taints_spec],
        Escalation::exit_process,
    );

    let nodes = Resource::of(Kind::Node);
    let node = json!({"metadata": {"name": NODE}, "spec": {}});
    store
        .send(Create {
            resource: nodes,
            namespace: None,
            body: node,
            opts: WriteOptions::default(),
        })
        .await??;
    for i in 0..args.pods {
        store.send(pod(i)).await??;
    }
    let mut sel = Selector::all(Kind::Pod);
    sel.fields = FieldSelector::equals("spec.nodeName", NODE);
    let mut watch = store
        .send(Watch {
            selector: sel,
            from: Some(0),
        })
        .await??;
    while let Ok(WatchEvent::Change(_)) = watch.try_recv() {}

    let mut node = store
        .send(Get {
            kind: Kind::Node,
            namespace: String::new(),
            name: NODE.into(),
        })
        .await??
        .value();
    node["spec"]["taints"] = json!([{"key": "bench", "effect": "NoExecute"}]);
    let tainted = store
        .send(Update {
            resource: nodes,
            body: node,
            status_only: false,
            opts: WriteOptions::default(),
        })
        .await??;
    let added = wall_ms(&tainted.value()["spec"]["taints"][0]["timeAdded"]);
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
        let Some(WatchEvent::Change(c)) = watch.recv().await else {
            continue;
        };
        let v = c.object.value();
        if v["metadata"]["deletionTimestamp"].is_null() || !seen.insert(c.object.name.clone()) {
            continue;
        }
        let now = podvisor_core::time::now_unix_ms();
        let seconds = v["spec"]["tolerations"][0]["tolerationSeconds"]
            .as_u64()
            .unwrap_or(0);
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
