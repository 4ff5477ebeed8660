//! How many CRI mutations a runtime takes at once before it slows down or fails: `n`
//! one-container bridge pods started (RunPodSandbox, CreateContainer, StartContainer) and
//! then torn down (StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox) with
//! at most `p` calls of each pod's sequence in flight, for several `p`. Prints each call's
//! p50 and p99, the wall time and throughput, and the calls that failed or ran past the
//! deadline: what podvisor's bound on concurrent mutations is chosen from.
//!
//! cargo run --release -p podvisor-bench --bin burst-bench -- --pods 200 --bounds 4,8,16,32,200

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use futures_util::StreamExt;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_cri::sample::{container_config, sandbox_config};
use podvisor_cri::{CriClient, Timeouts};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    /// Pods per round.
    #[arg(long, default_value_t = 100)]
    pods: usize,
    /// Pod sequences in flight at once, one round each.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,100")]
    bounds: Vec<usize>,
    /// A call's deadline, as the agent's (`[runtime] request_timeout`).
    #[arg(long, default_value = "120")]
    timeout_secs: u64,
}

/// Each call's latencies, and how many failed.
#[derive(Default)]
struct Calls {
    ok: BTreeMap<&'static str, Samples>,
    failed: BTreeMap<&'static str, usize>,
}

impl Calls {
    fn record<T, E>(&mut self, call: &'static str, took: Duration, r: &Result<T, E>) {
        match r {
            Ok(_) => self.ok.entry(call).or_default().push(took),
            Err(_) => *self.failed.entry(call).or_default() += 1,
        }
    }

    fn merge(&mut self, other: Calls) {
        for (k, v) in other.ok {
            let mine = self.ok.entry(k).or_default();
            for d in v.iter() {
                mine.push(*d);
            }
        }
        for (k, n) in other.failed {
            *self.failed.entry(k).or_default() += n;
        }
    }
}

/// Times one call into `calls`.
async fn timed<T, E>(
    calls: &mut Calls,
    name: &'static str,
    f: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let t0 = Instant::now();
    let r = f.await;
    calls.record(name, t0.elapsed(), &r);
    r
}

struct Started {
    sandbox: String,
    container: Option<String>,
}

async fn start(cri: &CriClient, uid: String, log_dir: &str) -> (Calls, Option<Started>) {
    let mut calls = Calls::default();
    let sandbox = sandbox_config(&uid, &format!("burst-{uid}"), false, log_dir);
    let Ok(id) = timed(
        &mut calls,
        "RunPodSandbox",
        cri.run_pod_sandbox(sandbox.clone(), ""),
    )
    .await
    else {
        return (calls, None);
    };
    let config = container_config(
        &sandbox,
        "main",
        &["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
    );
    let created = timed(
        &mut calls,
        "CreateContainer",
        cri.create_container(&id, config, sandbox),
    )
    .await;
    let container = match created {
        Ok(c) => {
            let _ = timed(&mut calls, "StartContainer", cri.start_container(&c)).await;
            Some(c)
        }
        Err(_) => None,
    };
    (
        calls,
        Some(Started {
            sandbox: id,
            container,
        }),
    )
}

async fn teardown(cri: &CriClient, pod: Started) -> Calls {
    let mut calls = Calls::default();
    if let Some(c) = &pod.container {
        let _ = timed(
            &mut calls,
            "StopContainer",
            cri.stop_container(c, Duration::from_secs(2)),
        )
        .await;
        let _ = timed(&mut calls, "RemoveContainer", cri.remove_container(c)).await;
    }
    let _ = timed(
        &mut calls,
        "StopPodSandbox",
        cri.stop_pod_sandbox(&pod.sandbox),
    )
    .await;
    let _ = timed(
        &mut calls,
        "RemovePodSandbox",
        cri.remove_pod_sandbox(&pod.sandbox),
    )
    .await;
    calls
}

fn report(phase: &str, bound: usize, n: usize, wall: Duration, calls: &Calls) {
    println!(
        "\n{phase}, {bound} at once: {n} pods in {:.2} s ({:.1} pods/s)",
        wall.as_secs_f64(),
        n as f64 / wall.as_secs_f64()
    );
    println!("{}", Summary::HEADER);
    for (call, samples) in &calls.ok {
        println!("{}", samples.summary().row(call));
    }
    for (call, n) in &calls.failed {
        println!("{call}: {n} failed or past the deadline");
    }
}

async fn round(cri: &CriClient, args: &Args, bound: usize, log_dir: &str) {
    let prefix = format!("burst-{}-{bound}", std::process::id());
    let t0 = Instant::now();
    let started: Vec<(Calls, Option<Started>)> = futures_util::stream::iter(0..args.pods)
        .map(|i| start(cri, format!("{prefix}-{i}"), log_dir))
        .buffer_unordered(bound.max(1))
        .collect()
        .await;
    let wall = t0.elapsed();
    let mut calls = Calls::default();
    let mut pods = Vec::new();
    for (c, p) in started {
        calls.merge(c);
        pods.extend(p);
    }
    report("start", bound, args.pods, wall, &calls);
    let t0 = Instant::now();
    let n = pods.len();
    let ended: Vec<Calls> = futures_util::stream::iter(pods)
        .map(|p| teardown(cri, p))
        .buffer_unordered(bound.max(1))
        .collect()
        .await;
    let wall = t0.elapsed();
    let mut calls = Calls::default();
    for c in ended {
        calls.merge(c);
    }
    report("teardown", bound, n, wall, &calls);
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cri = CriClient::new(
        &args.runtime.endpoint,
        Timeouts {
            call: Duration::from_secs(args.timeout_secs),
            ..Timeouts::default()
        },
    )?;
    let v = cri
        .version()
        .await
        .with_context(|| format!("is containerd running at {}?", args.runtime.endpoint))?;
    println!(
        "# burst-bench: {} {}, {} bridge pods per round, bounds {:?}, {}-s deadline",
        v.runtime_name, v.runtime_version, args.pods, args.bounds, args.timeout_secs
    );
    let log_dir = std::env::temp_dir().join(format!("burst-bench-{}", std::process::id()));
    std::fs::create_dir_all(&log_dir)?;
    for &bound in &args.bounds {
        round(&cri, &args, bound, &log_dir.to_string_lossy()).await;
    }
    let _ = std::fs::remove_dir_all(&log_dir);
    Ok(())
}
