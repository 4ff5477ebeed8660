//! What a relist's listing costs (issue 18): the two list calls against the running
//! containerd, decoded whole (every label and annotation into owned maps, as the generated
//! CRI types do) and as podvisor's views (`Runtime::list_pods`: ids, names, states and the
//! few labels it reads back), one after the other, `--samples` times `--gap-ms` apart; and
//! the decode alone of one response, whole and as the views. With `--pods N` it first
//! starts N one-container pods by raw CRI calls (and removes them after).
//!
//! scripts/containerd-up && cargo run --release -p podvisor-bench --bin list-bench -- --pods 500

use std::time::{Duration, Instant};

use clap::Parser;
use podvisor_bench::stats::Samples;
use podvisor_cri::{CriClient, CriRuntime, Runtime, Timeouts};
use prost::Message;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    /// Pods to start first (by raw CRI calls, 8 at once; removed at the end).
    #[arg(long, default_value_t = 0)]
    pods: usize,
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Pause between two listings, as a relist period would leave.
    #[arg(long, default_value_t = 200)]
    gap_ms: u64,
}

/// The decode alone, from the encoded whole answers, `n` times each way.
fn decode(
    sandboxes: bytes::Bytes,
    containers: bytes::Bytes,
    n: usize,
) -> anyhow::Result<(Samples, Samples)> {
    use podvisor_cri::proto::{ListContainersResponse, ListPodSandboxResponse};
    let (mut whole, mut views) = (Samples::new(), Samples::new());
    for _ in 0..n {
        let t = Instant::now();
        let a = ListPodSandboxResponse::decode(sandboxes.clone())?;
        let b = ListContainersResponse::decode(containers.clone())?;
        whole.push(t.elapsed());
        drop((a, b));
        let t = Instant::now();
        let v = podvisor_cri::client::decode_views(sandboxes.clone(), containers.clone())?;
        views.push(t.elapsed());
        drop(v);
    }
    Ok((whole, views))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cri = CriClient::new(&args.runtime.endpoint, Timeouts::default())?;
    let rt = CriRuntime::new(&args.runtime.endpoint, Timeouts::default())?;
    let dir = std::env::temp_dir().join(format!("list-bench-{}", std::process::id()));
    let started = if args.pods > 0 {
        let prefix = format!("list-{}", std::process::id());
        let (pods, took) = podvisor_bench::floor::start_pods_parallel(
            &cri,
            &prefix,
            args.pods,
            8,
            false,
            &dir.to_string_lossy(),
        )
        .await?;
        eprintln!("started {} pods in {:.1} s", pods.len(), took.as_secs_f64());
        pods
    } else {
        Vec::new()
    };
    let (mut whole, mut views) = (Samples::new(), Samples::new());
    let mut last = (Vec::new(), Vec::new());
    for _ in 0..args.samples {
        tokio::time::sleep(Duration::from_millis(args.gap_ms)).await;
        let t = Instant::now();
        let (s, c) = tokio::try_join!(cri.list_pod_sandbox(None), cri.list_containers(None))?;
        whole.push(t.elapsed());
        last = (s, c);
        tokio::time::sleep(Duration::from_millis(args.gap_ms)).await;
        let t = Instant::now();
        let pods = rt.list_pods().await?;
        views.push(t.elapsed());
        drop(pods);
    }
    use podvisor_cri::proto::{ListContainersResponse, ListPodSandboxResponse};
    let sandboxes = last.0.len();
    let s = ListPodSandboxResponse { items: last.0 }.encode_to_vec();
    let c = ListContainersResponse { containers: last.1 }.encode_to_vec();
    let (s, c) = (bytes::Bytes::from(s), bytes::Bytes::from(c));
    let (dw, dv) = decode(s.clone(), c.clone(), args.samples)?;
    let v = rt.version().await?;
    println!(
        "# list-bench: {} {}, {} sandboxes, answers of {} + {} bytes, {} ms apart\n",
        v.runtime_name,
        v.runtime_version,
        sandboxes,
        s.len(),
        c.len(),
        args.gap_ms
    );
    println!("{}", podvisor_bench::stats::Summary::HEADER);
    for (what, s) in [
        ("both list calls, whole messages", &whole),
        ("both list calls, views (list_pods, grouped)", &views),
        ("decode alone, whole messages", &dw),
        ("decode alone, views", &dv),
    ] {
        println!("{}", s.summary().row(what));
    }
    if !started.is_empty() {
        podvisor_bench::floor::teardown_parallel(&cri, &started, 8).await?;
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
