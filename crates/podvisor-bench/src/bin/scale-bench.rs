//! Many pods on one node (issue 18): the release agent with `[allocatable] pods` raised,
//! side by side with the raw CRI floor in the same run. Idle first; then `--pods`
//! manifests written at once and the time until every pod runs; 20 s later, over a window,
//! the agent's RSS, CPU, threads and open files, its relists (each one's duration, from the
//! PLEG's summary) and its busiest mailbox, and its CRI calls so far; every manifest
//! removed at once and the time until the runtime holds none of its pods; the same for
//! 110 pods; the RSS at the end. The floor starts and removes the same number of pods
//! with raw CRI calls at several parallelisms.
//!
//! scripts/containerd-up && cargo build --release --bin podvisor \
//!   && cargo run --release -p podvisor-bench --bin scale-bench -- --pods 500

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use podvisor_bench::agent::BenchAgent;
use podvisor_bench::procstat;
use podvisor_bench::stats::Samples;
use podvisor_cri::{CriRuntime, Runtime, Timeouts};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    /// The largest step.
    #[arg(long, default_value_t = 500)]
    pods: usize,
    /// Seconds over which each step's figures are sampled.
    #[arg(long, default_value_t = 30)]
    window: u64,
    /// Parallelisms of the raw-CRI floor (none: `--floor 0`).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16")]
    floor: Vec<usize>,
    /// Seconds to wait, with the largest step's pods running, before its RSS is read again
    /// (what the agent lets go once a burst is over: the watch window keeps 75 s).
    #[arg(long, default_value_t = 0)]
    settled: u64,
    /// Extra agent configuration (TOML sections), e.g. "[runtime]\nmax_mutations_in_flight = 16".
    #[arg(long, default_value = "")]
    extra: String,
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n  - name: c\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"trap 'exit 0' TERM; sleep 86400 & wait\"]\n";

struct Step {
    pods: usize,
    start: Option<Duration>,
    rss_mib: f64,
    anon_mib: f64,
    cpu_pct: f64,
    threads: u64,
    fds: usize,
    relist: Samples,
    max_queued: u64,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

async fn running(agent: &BenchAgent) -> anyhow::Result<u64> {
    let s = agent.actor_state("status-manager").await?;
    Ok(s["by_phase"]["Running"].as_u64().unwrap_or(0))
}

async fn max_queued(agent: &BenchAgent) -> anyhow::Result<u64> {
    let body =
        podvisor_debug::client::get(agent.debug()?, "/debug/actors?limit=5000", None).await?;
    let v: serde_json::Value = serde_json::from_str(&body)?;
    let actors = v["actors"].as_array().cloned().unwrap_or_default();
    Ok(actors
        .iter()
        .filter_map(|a| a["mailbox"]["queued"].as_u64())
        .max()
        .unwrap_or(0))
}

/// Writes pods `from..to` at once and waits until `to` run.
async fn grow(agent: &BenchAgent, from: usize, to: usize) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    for i in from..to {
        agent.write(&format!("p{i}"), &POD.replace("NAME", &format!("p{i}")))?;
    }
    while running(agent).await? < to as u64 {
        if t0.elapsed() > Duration::from_secs(900) {
            bail!(
                "{} of {to} pods running after 15 min",
                running(agent).await?
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(t0.elapsed())
}

/// Samples the step's figures over `window`.
async fn measure(agent: &BenchAgent, pods: usize, window: Duration) -> anyhow::Result<Step> {
    let pid = agent.child.id();
    let (cpu0, t0) = (procstat::cpu_time(pid)?, Instant::now());
    let (mut relist, mut last, mut queued) = (Samples::new(), None, 0);
    // Every actor's mailbox, 500 pods' worth of JSON, only every 5 s: asked for every
    // 250 ms it was a good part of the CPU this measures.
    let mut mailboxes_at = t0;
    while t0.elapsed() < window {
        let s = agent.actor_state("pleg").await?;
        let at = s["last_relist_unix_ms"].as_u64();
        if at != last
            && let Some(ms) = s["last_relist_ms"].as_f64()
        {
            relist.push(Duration::from_secs_f64(ms / 1e3));
            last = at;
        }
        if mailboxes_at.elapsed() >= Duration::from_secs(5) {
            queued = queued.max(max_queued(agent).await?);
            mailboxes_at = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let cpu = procstat::cpu_time(pid)? - cpu0;
    Ok(Step {
        pods,
        start: None,
        rss_mib: mib(procstat::rss_bytes(pid)?),
        anon_mib: mib(procstat::anon_rss_bytes(pid)?),
        cpu_pct: cpu.as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0,
        threads: threads(pid),
        fds: fds(pid),
        relist,
        max_queued: queued,
    })
}

/// The agent's RSS and its anonymous part, in bytes.
fn rss_now(agent: &BenchAgent) -> anyhow::Result<(u64, u64)> {
    let pid = agent.child.id();
    Ok((procstat::rss_bytes(pid)?, procstat::anon_rss_bytes(pid)?))
}

/// Removes every manifest and waits until the runtime holds none of the agent's pods.
async fn shrink(agent: &BenchAgent, rt: &CriRuntime) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    agent.clear(rt).await?;
    Ok(t0.elapsed())
}

fn print(steps: &[Step]) {
    println!(
        "| pods | all running after | agent RSS | of it anonymous | agent CPU | threads | fds | relist p50 | relist p99 | busiest mailbox |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in steps {
        let r = s.relist.summary();
        println!(
            "| {} | {} | {:.1} MiB | {:.1} MiB | {:.2} % | {} | {} | {:.2} ms | {:.2} ms | {} |",
            s.pods,
            s.start
                .map_or("-".into(), |d| format!("{:.1} s", d.as_secs_f64())),
            s.rss_mib,
            s.anon_mib,
            s.cpu_pct,
            s.threads,
            s.fds,
            r.p50.as_secs_f64() * 1e3,
            r.p99.as_secs_f64() * 1e3,
            s.max_queued
        );
    }
}

/// The agent's CRI calls so far, by the kubelet's metrics: how many of each, and the sum
/// of their durations in seconds.
type Calls = std::collections::BTreeMap<String, (f64, f64)>;

async fn runtime_calls(agent: &BenchAgent) -> anyhow::Result<Calls> {
    let text = podvisor_debug::client::get(agent.debug()?, "/metrics", None).await?;
    let value = |line: &str| line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
    let op = |line: &str| line.split('"').nth(1).map(str::to_string);
    let mut rows = Calls::new();
    for line in text.lines() {
        if line.starts_with("kubelet_runtime_operations_total{") {
            if let (Some(o), Some(v)) = (op(line), value(line)) {
                rows.entry(o).or_default().0 = v;
            }
        } else if line.starts_with("kubelet_runtime_operations_duration_seconds_sum{")
            && let (Some(o), Some(v)) = (op(line), value(line))
        {
            rows.entry(o).or_default().1 = v;
        }
    }
    Ok(rows)
}

/// The calls made between two readings.
fn print_calls(what: &str, before: &Calls, after: &Calls) {
    println!("\nCRI calls of the agent {what} (kubelet_runtime_operations_*):");
    println!("| operation | calls | mean ms |\n|---|---:|---:|");
    for (o, (n, sum)) in after {
        let (n0, sum0) = before.get(o).copied().unwrap_or_default();
        let (n, sum) = (n - n0, sum - sum0);
        if n > 0.0 {
            println!("| {o} | {n} | {:.2} |", sum / n * 1e3);
        }
    }
}

async fn floor(cri: &podvisor_cri::CriClient, n: usize, p: usize) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("scale-floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let prefix = format!("scale-{}-{p}", std::process::id());
    let (pods, up) = podvisor_bench::floor::start_pods_parallel(
        cri,
        &prefix,
        n,
        p,
        false,
        &dir.to_string_lossy(),
    )
    .await?;
    let t0 = Instant::now();
    podvisor_bench::floor::teardown_parallel(cri, &pods, p).await?;
    println!(
        "| raw CRI, {p} at once | {:.1} s | {:.1} s |",
        up.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = args.agent.binary()?;
    let rt = CriRuntime::new(&args.runtime.endpoint, Timeouts::default())?;
    let v = rt
        .version()
        .await
        .with_context(|| format!("is containerd running at {}?", args.runtime.endpoint))?;
    println!(
        "# scale-bench: {} {}, {} pods, window {} s\n",
        v.runtime_name, v.runtime_version, args.pods, args.window
    );
    println!("| what | {} started | {} removed |", args.pods, args.pods);
    println!("|---|---:|---:|");
    for &p in args.floor.iter().filter(|p| **p > 0) {
        floor(rt.client(), args.pods, p).await?;
    }
    let extra = format!(
        "[allocatable]\npods = {}\n{}",
        args.pods + 10,
        args.extra.replace("\\n", "\n")
    );
    let agent = BenchAgent::start(
        &bin,
        "scale-bench",
        "scale",
        &args.runtime.endpoint,
        &extra,
        "warn",
    )?;
    agent.api().await?;
    let window = Duration::from_secs(args.window);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut steps = vec![measure(&agent, 0, window).await?];
    let mut removals = Vec::new();
    let mut settled = None;
    // All of them at once first (what compares with the floor), then the kubelet's
    // default allocatable.
    for n in [args.pods, 110.min(args.pods)] {
        let before = runtime_calls(&agent).await?;
        let took = grow(&agent, 0, n).await?;
        let grown = runtime_calls(&agent).await?;
        // The last statuses and events of the burst are written before "idle" is measured.
        tokio::time::sleep(Duration::from_secs(20)).await;
        let mut s = measure(&agent, n, window).await?;
        s.start = Some(took);
        steps.push(s);
        if n == args.pods && args.settled > 0 {
            tokio::time::sleep(Duration::from_secs(args.settled)).await;
            settled = Some(rss_now(&agent)?);
        }
        let idle = runtime_calls(&agent).await?;
        removals.push((n, shrink(&agent, &rt).await?));
        if n == args.pods {
            print_calls(&format!("while the {n} started"), &before, &grown);
            print_calls(
                &format!("while the {n} were removed"),
                &idle,
                &runtime_calls(&agent).await?,
            );
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    let (after, anon) = rss_now(&agent)?;
    println!();
    print(&steps);
    println!();
    if let Some((rss, anon)) = settled {
        println!(
            "agent RSS about {} s after the last of the {} started, all still running: {:.1} MiB, {:.1} MiB of it anonymous",
            args.settled + 20 + args.window,
            args.pods,
            mib(rss),
            mib(anon)
        );
    }
    for (n, took) in removals {
        println!(
            "agent: {n} pods removed at once, gone from the runtime in {:.1} s",
            took.as_secs_f64()
        );
    }
    println!(
        "agent RSS 10 s after the last removal: {:.1} MiB, {:.1} MiB of it anonymous",
        mib(after),
        mib(anon)
    );
    Ok(())
}
