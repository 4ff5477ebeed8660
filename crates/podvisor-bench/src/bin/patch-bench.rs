//! The worst patches a client can send within the API's limits (a 3 MiB body, a 1.5 MiB
//! object, 10,000 JSON-patch operations), each as a dry run (`dryRun=All`, which any
//! caller allowed to patch may send), against the store actor as the agent runs it: how
//! long the patch takes, and how long a GET sent every 5 ms meanwhile waits at worst (the
//! store serves every API call and every pod status, so that wait is everyone's).
//!
//! cargo run --release -p podvisor-bench --bin patch-bench [-- --scale 1.0 --dir DIR]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use podvisor_actors::{ActorRef, ChildSpec};
use podvisor_client::{AnyObject, Patch, PostParams, Subresource};
use podvisor_core::Kind;
use podvisor_store::actor::{Create, Get, PatchObject};
use podvisor_store::{StoreActor, StoreConfig};
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "target/patch-bench")]
    dir: PathBuf,
    /// Fraction of the worst size (1.0: bodies just under the API's 3 MiB).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
}

/// Each case: its name, the object it patches (kind, name) and the patch.
struct Case {
    name: &'static str,
    kind: Kind,
    object: &'static str,
    patch: Patch,
}

fn n(scale: f64, full: usize) -> usize {
    ((full as f64 * scale) as usize).max(10)
}

/// A finalizer or label key with a long common prefix, so that comparing two costs their
/// length.
fn key(i: usize) -> String {
    format!("example.com/a-rather-long-finalizer-name-{i:06}")
}

fn strategic_cases(scale: f64) -> Vec<Case> {
    let items = n(scale, 20_000);
    let names: Vec<Value> = (0..items).map(|i| json!(key(i))).collect();
    let reversed: Vec<&Value> = names.iter().rev().collect();
    let fresh: Vec<Value> = (items..2 * items).map(|i| json!(key(i))).collect();
    let order = json!({"metadata": {"$setElementOrder/finalizers": reversed}});
    let delete = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": reversed}});
    let set = json!({"metadata": {"finalizers": fresh}});
    let retain = json!({"metadata": {"labels": {"$retainKeys": reversed}}});
    let gone: Vec<Value> = (0..n(scale, 70_000))
        .map(|i| json!({"name": format!("X{i:06}"), "$patch": "delete"}))
        .collect();
    let by_key = json!({"spec": {"containers": [{"name": "c", "env": gone}]}});
    let strategic = |name, kind, object, p: Value| Case {
        name,
        kind,
        object,
        patch: Patch::Strategic(p),
    };
    vec![
        strategic(
            "strategic $setElementOrder",
            Kind::ConfigMap,
            "listed",
            order,
        ),
        strategic(
            "strategic $deleteFromPrimitiveList",
            Kind::ConfigMap,
            "listed",
            delete,
        ),
        strategic(
            "strategic set merge (finalizers)",
            Kind::ConfigMap,
            "listed",
            set,
        ),
        strategic("strategic $retainKeys", Kind::ConfigMap, "labelled", retain),
        strategic("strategic list merge by key", Kind::Pod, "big", by_key),
    ]
}

fn json_patch_case(scale: f64) -> Case {
    let big = "x".repeat(n(scale, 1_000_000));
    let mut ops = vec![json!({"op": "add", "path": "/data/a", "value": big})];
    for _ in 0..n(scale, 4_999) {
        ops.push(json!({"op": "copy", "from": "/data/a", "path": "/data/b"}));
        ops.push(json!({"op": "remove", "path": "/data/b"}));
    }
    Case {
        name: "JSON patch copy and remove",
        kind: Kind::ConfigMap,
        object: "small",
        patch: Patch::Json(serde_json::from_value(Value::Array(ops)).unwrap()),
    }
}

fn body_bytes(p: &Patch) -> usize {
    match p {
        Patch::Json(ops) => serde_json::to_vec(ops).map_or(0, |b| b.len()),
        Patch::Merge(v) | Patch::Strategic(v) => serde_json::to_vec(v).map_or(0, |b| b.len()),
        Patch::Apply { config, .. } => serde_json::to_vec(config).map_or(0, |b| b.len()),
    }
}

async fn seed(store: &ActorRef<StoreActor>, scale: f64) {
    let small: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "small"}, "data": {"k": "v"}})).unwrap();
    let env: Vec<Value> = (0..n(scale, 40_000))
        .map(|i| json!({"name": format!("E{i:06}"), "value": ""}))
        .collect();
    let big: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "big"},
        "spec": {"containers": [{"name": "c", "image": "i", "env": env}]}}))
    .unwrap();
    let finalizers: Vec<String> = (0..n(scale, 20_000)).map(key).collect();
    let listed: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "listed", "finalizers": finalizers}}))
            .unwrap();
    let labels: serde_json::Map<String, Value> = (0..n(scale, 20_000))
        .map(|i| (key(i), json!("v")))
        .collect();
    let labelled: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "labelled", "labels": labels}}))
            .unwrap();
    for object in [
        AnyObject::new(small),
        AnyObject::new(listed),
        AnyObject::new(labelled),
        AnyObject::new(big),
    ] {
        let create = Create {
            namespace: Some("default".into()),
            object,
            opts: PostParams::default(),
        };
        store.send(create).await.unwrap().unwrap();
    }
}

/// The patch's time and its outcome, and the longest a GET sent every 5 ms waited.
async fn run(store: &ActorRef<StoreActor>, case: Case) -> (Duration, String, Duration) {
    let probe = store.clone();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let waits = actix::spawn(async move {
        let mut worst = Duration::ZERO;
        loop {
            let get = Get {
                kind: Kind::ConfigMap,
                namespace: "default".into(),
                name: "small".into(),
            };
            let t0 = Instant::now();
            let _ = probe.send(get).await;
            worst = worst.max(t0.elapsed());
            tokio::select! {
                _ = &mut stopped => return worst,
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let msg = PatchObject {
        kind: case.kind,
        namespace: "default".into(),
        name: case.object.into(),
        patch: case.patch,
        sub: Subresource::Main,
        strict: false,
        opts: PostParams { dry_run: true },
        manager: None,
    };
    let t0 = Instant::now();
    let outcome = match store.send(msg).await {
        Ok(Ok(_)) => "applied".to_string(),
        Ok(Err(e)) => format!(
            "refused: {}",
            e.to_string().chars().take(70).collect::<String>()
        ),
        Err(e) => format!("no answer: {e}"),
    };
    let took = t0.elapsed();
    let _ = stop.send(());
    (took, outcome, waits.await.unwrap_or_default())
}

/// The process's peak resident memory since the last reset (`VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    let system = actix::System::new();
    system.block_on(async move {
        let cfg = StoreConfig {
            path: args.dir.join("store.redb"),
            window: 1000,
        };
        // On an arbiter of its own, as the agent runs it (`src/agent/node.rs`).
        let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 64))
            .arbiter(actix::Arbiter::new().handle())
            .start_unsupervised();
        seed(&store, args.scale).await;
        println!(
            "# patch-bench: each patch as a dry run, scale {}\n",
            args.scale
        );
        println!("| patch | body | took | outcome | longest GET wait meanwhile | peak RSS |");
        println!("|---|---|---|---|---|---|");
        let mut cases = strategic_cases(args.scale);
        cases.push(json_patch_case(args.scale));
        for case in cases {
            let (name, body) = (case.name, body_bytes(&case.patch));
            // The peak RSS counts from here (`clear_refs` 5 resets the high-water mark).
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            let (took, outcome, wait) = run(&store, case).await;
            println!(
                "| {name} | {:.2} MiB | {} | {outcome} | {} | {} MiB |",
                body as f64 / 1048576.0,
                podvisor_bench::stats::ms(took),
                podvisor_bench::stats::ms(wait),
                peak_rss_kib() / 1024
            );
        }
    });
}
