//! The store's own cost, in process (no HTTP, no TLS): durable creates and status updates
//! of pods (each one redb transaction, fsynced), gets, lists of 110 and 1,000 pods
//! assembled as the API sends them, and the heap 1,000 stored pods take.
//!
//! cargo run --release -p podvisor-bench --bin store-bench [-- --dir DIR]
//! DIR must be on a real disk for the write figures to mean anything (not tmpfs).

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use podvisor_bench::alloc::{Counting, live_bytes};
use podvisor_bench::stats::{Samples, Summary};
use podvisor_client::{LabelSelector, PostParams, Subresource};
use podvisor_core::Kind;
use podvisor_store::{Resource, Selector, Store, StoreConfig, decode};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "target/store-bench")]
    dir: PathBuf,
    #[arg(long, default_value_t = 1000)]
    pods: usize,
}

fn pod(i: usize) -> Value {
    json!({"metadata": {"name": format!("web-{i:05}"), "labels": {"app": "web", "tier": "front"}},
        "spec": {"nodeName": "bench", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "main", "image": "localhost/podvisor/busybox:test",
                "command": ["/bin/sh", "-c", "while true; do sleep 1; done"],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}})
}

fn status() -> Value {
    json!({"phase": "Running", "podIP": "10.88.0.7", "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "busybox", "imageID": "sha256:x",
            "state": {"running": {"startedAt": "2026-11-23T10:00:00Z"}}}]})
}

/// The list as the API sends it: the stored bytes joined.
fn list_bytes(s: &Store, sel: &Selector) -> usize {
    let page = s.list(sel, None, None).unwrap();
    let mut out =
        Vec::with_capacity(page.items.iter().map(|o| o.json.len() + 1).sum::<usize>() + 64);
    out.extend_from_slice(b"{\"kind\":\"PodList\",\"items\":[");
    for o in &page.items {
        out.extend_from_slice(&o.json);
        out.push(b',');
    }
    out.extend_from_slice(b"]}");
    out.len()
}

fn time_list(s: &Store, n: usize, rounds: usize) -> Summary {
    let mut sel = Selector::all(Kind::Pod);
    sel.labels = LabelSelector::parse(if n <= 110 { "sample=yes" } else { "" }).unwrap();
    let mut t = Samples::new();
    for _ in 0..rounds {
        let t0 = Instant::now();
        std::hint::black_box(list_bytes(s, &sel));
        t.push(t0.elapsed());
    }
    t.summary()
}

fn main() {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    let cfg = StoreConfig {
        path: args.dir.join("store.redb"),
        window: 10_000,
    };
    let mut s = Store::open(&cfg).unwrap();
    let res = Resource::of(Kind::Pod);
    let heap0 = live_bytes();
    let mut creates = Samples::new();
    for i in 0..args.pods {
        let mut p = pod(i);
        if i < 110 {
            p["metadata"]["labels"]["sample"] = "yes".into();
        }
        let t0 = Instant::now();
        let o = decode::object(&res, p, false).unwrap();
        s.create(&res, o, Some("default"), PostParams::default())
            .unwrap();
        creates.push(t0.elapsed());
    }
    let heap = live_bytes() - heap0;
    let mut updates = Samples::new();
    for i in 0..args.pods {
        let mut v = s
            .get(Kind::Pod, "default", &format!("web-{i:05}"))
            .unwrap()
            .value();
        v["status"] = status();
        let t0 = Instant::now();
        let o = decode::object(&res, v, false).unwrap();
        s.update(&res, o, Subresource::Status, PostParams::default())
            .unwrap();
        updates.push(t0.elapsed());
    }
    let heap_updated = live_bytes() - heap0;
    let mut gets = Samples::new();
    for i in 0..args.pods {
        let t0 = Instant::now();
        std::hint::black_box(s.get(Kind::Pod, "default", &format!("web-{i:05}")).unwrap());
        gets.push(t0.elapsed());
    }
    println!(
        "# store-bench: {} pods in {}\n",
        args.pods,
        cfg.path.display()
    );
    println!("{}", Summary::HEADER);
    println!("{}", creates.summary().row("create (durable)"));
    println!("{}", updates.summary().row("status update (durable)"));
    println!("{}", gets.summary().row("get"));
    println!(
        "{}",
        time_list(&s, 110, 200).row("list 110 pods (label selector), as API bytes")
    );
    println!(
        "{}",
        time_list(&s, args.pods, 200).row(&format!("list {} pods, as API bytes", args.pods))
    );
    println!(
        "\nheap for {} stored pods (objects, index and change window): {:.1} MiB ({} B per pod)",
        args.pods,
        heap as f64 / 1048576.0,
        heap / args.pods as isize
    );
    println!(
        "heap after a status update of each (the database's page cache included): {:.1} MiB",
        heap_updated as f64 / 1048576.0
    );
}
