//! The floor benchmark: raw CRI latencies against a running containerd, one call at a time
//! and in a parallel batch. Every later latency figure of podvisor is quoted against these.
//!
//! cargo run --release -p podvisor-bench --bin cri-bench -- --endpoint unix://SOCKET

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use podvisor_bench::floor::{self, RawPod};
use podvisor_bench::stats::{Samples, Summary};
use podvisor_cri::{CriClient, Timeouts};

#[derive(Parser)]
struct Args {
    /// CRI endpoint of the containerd to measure.
    #[arg(
        long,
        default_value = "unix:///var/lib/podvisor-containerd/containerd.sock"
    )]
    endpoint: String,
    /// Pods started and torn down one at a time, per network mode.
    #[arg(long, default_value_t = 30)]
    iterations: usize,
    /// Pods present while the list calls are timed.
    #[arg(long, default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    list_pods: usize,
    /// Pods in the parallel batch.
    #[arg(long, default_value_t = 20)]
    batch: usize,
    /// Starts in flight in the parallel batch.
    #[arg(long, default_value_t = 4)]
    parallelism: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cri = CriClient::new(&args.endpoint, Timeouts::default())?;
    let version = cri.version().await.with_context(|| {
        format!(
            "is containerd running at {}? (scripts/containerd-up)",
            args.endpoint
        )
    })?;
    let log_dir = std::env::temp_dir().join(format!("cri-bench-{}", std::process::id()));
    std::fs::create_dir_all(&log_dir)?;
    let log_dir = log_dir.to_string_lossy().into_owned();
    println!(
        "# cri-bench: {} {} ({} iterations, {} pods listed, batch {} at parallelism {})\n",
        version.runtime_name,
        version.runtime_version,
        args.iterations,
        args.list_pods,
        args.batch,
        args.parallelism
    );

    let mut live: Vec<RawPod> = Vec::new();
    let result = run(&cri, &args, &log_dir, &mut live).await;
    // Whatever happened, leave nothing running.
    for pod in &live {
        let _ = floor::teardown_pod(&cri, pod).await;
    }
    let _ = std::fs::remove_dir_all(&log_dir);
    result
}

async fn run(
    cri: &CriClient,
    args: &Args,
    log_dir: &str,
    live: &mut Vec<RawPod>,
) -> anyhow::Result<()> {
    let prefix = format!("cri-bench-{}", std::process::id());
    let mut rows = Vec::new();

    for (mode, host) in [("host network", true), ("bridge CNI", false)] {
        let (mut sandbox, mut container, mut total, mut teardown) = (
            Samples::new(),
            Samples::new(),
            Samples::new(),
            Samples::new(),
        );
        for i in 0..args.iterations {
            let uid = format!("{prefix}-{}-{i}", if host { "host" } else { "cni" });
            let (pod, t) = floor::start_pod(cri, &uid, host, log_dir).await?;
            live.push(pod.clone());
            sandbox.push(t.sandbox);
            container.push(t.container);
            total.push(t.total());
            teardown.push(floor::teardown_pod(cri, &pod).await?);
            live.pop();
        }
        rows.push(sandbox.summary().row(&format!("RunPodSandbox ({mode})")));
        rows.push(
            container
                .summary()
                .row(&format!("CreateContainer+StartContainer ({mode})")),
        );
        rows.push(
            total
                .summary()
                .row(&format!("one-container pod start ({mode})")),
        );
        rows.push(
            teardown
                .summary()
                .row(&format!("stop+remove container and sandbox ({mode})")),
        );
    }

    // List and inspect calls with many pods present (host network: these calls do not
    // depend on the network mode, and host pods are quicker to set up).
    let (pods, _) = floor::start_pods_parallel(
        cri,
        &format!("{prefix}-list"),
        args.list_pods,
        4,
        true,
        log_dir,
    )
    .await?;
    live.extend(pods.iter().cloned());
    let (mut list, mut inspect) = (Samples::new(), Samples::new());
    for i in 0..100 {
        let t0 = Instant::now();
        let (s, c) = tokio::try_join!(cri.list_pod_sandbox(None), cri.list_containers(None))?;
        list.push(t0.elapsed());
        anyhow::ensure!(
            s.len() >= args.list_pods && c.len() >= args.list_pods,
            "pods missing from lists"
        );
        let pod = &pods[i % pods.len()];
        let t0 = Instant::now();
        tokio::try_join!(
            cri.pod_sandbox_status(&pod.sandbox_id),
            cri.container_status(&pod.container_id)
        )?;
        inspect.push(t0.elapsed());
    }
    rows.push(list.summary().row(&format!(
        "ListPodSandbox+ListContainers ({} pods)",
        args.list_pods
    )));
    rows.push(
        inspect
            .summary()
            .row("PodSandboxStatus+ContainerStatus (one pod)"),
    );
    teardown_all(cri, live).await?;

    // Many pods at once: the wall time a node needs to start a batch.
    let (pods, wall) = floor::start_pods_parallel(
        cri,
        &format!("{prefix}-batch"),
        args.batch,
        args.parallelism,
        false,
        log_dir,
    )
    .await?;
    live.extend(pods);
    let per_pod = wall / args.batch.max(1) as u32;
    teardown_all(cri, live).await?;

    println!("{}", Summary::HEADER);
    for row in rows {
        println!("{row}");
    }
    println!(
        "\nbatch: {} bridge pods at parallelism {}: {:.0} ms wall, {:.1} ms per pod",
        args.batch,
        args.parallelism,
        wall.as_secs_f64() * 1000.0,
        per_pod.as_secs_f64() * 1000.0
    );
    Ok(())
}

async fn teardown_all(cri: &CriClient, live: &mut Vec<RawPod>) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    for pod in live.drain(..) {
        floor::teardown_pod(cri, &pod).await?;
    }
    Ok(t0.elapsed())
}
