//! The pod workers' own cost: N pods × 10 updates each through the dispatcher, workers,
//! status cache and PLEG, with sync functions that do nothing, on the fake runtime. Total
//! time, time per update, heap per idle pod, and how both grow from 100 to 10,000 pods.
//!
//! cargo run --release -p podvisor-bench --bin pod-workers-bench

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use async_trait::async_trait;
use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{Registry, Shutdown, SupervisorConfig, start_root};
use podvisor_bench::alloc::{Counting, live_bytes};
use podvisor_bench::cpu::process_cpu;
use podvisor_core::SharedPod;
use podvisor_cri::{FakeRuntime, PodStatus};
use podvisor_kubelet::groups::{PodWorkerWiring, StatusWiring, pod_worker_group, status_group};
use podvisor_kubelet::pleg::PlegConfig;
use podvisor_kubelet::pod_workers::Timings;
use podvisor_kubelet::protocol::sync::SyncOutcome;
use podvisor_kubelet::protocol::sync::{PodSyncer, SyncContext, SyncError, Termination};
use podvisor_kubelet::protocol::updates::{UpdatePod, UpdatePodOptions, UpdateType};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Parser)]
struct Args {
    /// Pod counts to run, one after the other.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,10000")]
    pods: Vec<usize>,
    #[arg(long, default_value_t = 10)]
    updates: usize,
}

/// Does nothing but remember which version of each pod it synced last.
#[derive(Clone, Default)]
struct Noop(Arc<Mutex<(HashMap<String, String>, u64)>>);

#[async_trait]
impl PodSyncer for Noop {
    async fn sync_pod(
        &self,
        ctx: &SyncContext,
        _: UpdateType,
        pod: &SharedPod,
        _: &Arc<PodStatus>,
    ) -> Result<SyncOutcome, SyncError> {
        let v = pod.metadata.resource_version.clone().unwrap_or_default();
        let mut s = self.0.lock().unwrap();
        s.0.insert(ctx.uid.to_string(), v);
        s.1 += 1;
        Ok(SyncOutcome::default())
    }
    async fn sync_terminating_pod(
        &self,
        _: &SyncContext,
        _: &SharedPod,
        _: &Arc<PodStatus>,
        _: Termination<'_>,
    ) -> Result<(), SyncError> {
        Ok(())
    }
    async fn sync_terminated_pod(
        &self,
        _: &SyncContext,
        _: &SharedPod,
        _: &Arc<PodStatus>,
    ) -> Result<(), SyncError> {
        Ok(())
    }
}

fn pod(uid: &str, version: usize) -> SharedPod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.into());
    p.metadata.name = Some(uid.into());
    p.metadata.namespace = Some("default".into());
    p.metadata.resource_version = Some(version.to_string());
    SharedPod::new(p).expect("a pod with a UID")
}

struct Run {
    total: Duration,
    syncs: u64,
    cpu: Duration,
    heap_per_pod: f64,
}

async fn run(pods: usize, updates: usize) -> Run {
    let base = live_bytes();
    let registry = Registry::new();
    let fake = FakeRuntime::new();
    let wiring = StatusWiring {
        runtime: Arc::new(fake.clone()),
        events: Vec::new(),
        statuses: Vec::new(),
        pleg: PlegConfig::default(),
    };
    let status = status_group(&registry, wiring, SupervisorConfig::default());
    let noop = Noop::default();
    let group = pod_worker_group(
        &registry,
        PodWorkerWiring {
            syncer: Arc::new(noop.clone()),
            runtime: Arc::new(fake),
            cache: status.cache.recipient(),
            cache_get: status.cache.recipient(),
            reinspect: status.pleg.recipient(),
            desired: None,
            events: None,
            timings: Timings {
                resync_interval: Duration::from_secs(3600),
                backoff: Duration::from_secs(3600),
            },
            status_wait: Duration::from_secs(2),
            node_name: podvisor_cri::sample::SAMPLE_OWNER.into(),
            metrics: Default::default(),
        },
        SupervisorConfig::default(),
    );
    let root = start_root(
        "bench",
        SupervisorConfig::default(),
        registry.clone(),
        vec![status.spec, group.spec],
        |e| panic!("escalated: {e:?}"),
    );
    // Let the tree start and the PLEG relist once before timing.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let idle_before = live_bytes();
    let uids: Vec<String> = (0..pods).map(|i| format!("pod-{i}")).collect();
    let (t0, cpu0) = (Instant::now(), process_cpu());
    for v in 0..updates {
        for uid in &uids {
            let kind = if v == 0 {
                UpdateType::Create
            } else {
                UpdateType::Update
            };
            let _ = group
                .dispatcher
                .send(UpdatePod(UpdatePodOptions::new(kind, pod(uid, v))))
                .await;
        }
    }
    let last = (updates - 1).to_string();
    loop {
        let done = {
            let s = noop.0.lock().unwrap();
            s.0.len() == pods && s.0.values().all(|v| *v == last)
        };
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let total = t0.elapsed();
    let cpu = process_cpu() - cpu0;
    // Every pod idle: settle, then count what they hold.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let heap_per_pod = (live_bytes() - idle_before) as f64 / pods as f64;
    let syncs = noop.0.lock().unwrap().1;
    root.do_send(Shutdown);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = base;
    Run {
        total,
        syncs,
        cpu,
        heap_per_pod,
    }
}

fn main() {
    let args = Args::parse();
    System::new().block_on(async move {
        println!("# pod-workers-bench ({} updates per pod, no-op sync functions, fake runtime)\n", args.updates);
        println!("| pods | updates | syncs run | total ms | per update µs | CPU per update µs | heap per idle pod bytes |");
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        for &n in &args.pods {
            let r = run(n, args.updates).await;
            let updates = (n * args.updates) as f64;
            println!(
                "| {n} | {} | {} | {:.1} | {:.2} | {:.2} | {:.0} |",
                n * args.updates,
                r.syncs,
                r.total.as_secs_f64() * 1e3,
                r.total.as_secs_f64() * 1e6 / updates,
                r.cpu.as_secs_f64() * 1e6 / updates,
                r.heap_per_pod
            );
        }
        System::current().stop();
    });
}
