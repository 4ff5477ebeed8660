//! podvisor beside the tool people use today to "just run this YAML" on one machine:
//! `podman kube play` (Debian's podman), and the raw CRI floor, in one run. The same
//! one-container pod, started one at a time (`--starts` of them) and `--batch` at once;
//! each start is timed from the moment it is asked for (the manifest written, `podman kube
//! play` run, the first CRI call) to its container running. Then the whole stack's memory
//! with the batch running, per pod: agent + containerd + its shims for podvisor, the
//! conmon processes for podman (which has no daemon).
//!
//! crates/podvisor-bench/peer/podman-up   # prints CONTAINERS_CONF=...; export it
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin peer-bench
//! CONTAINERS_CONF=/var/lib/podvisor-peer/containers.conf target/release/peer-bench

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use futures_util::StreamExt;
use podvisor_bench::agent::BenchAgent;
use podvisor_bench::floor;
use podvisor_bench::procstat;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_cri::{CriRuntime, Runtime, Timeouts};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    #[arg(long, default_value_t = 20)]
    starts: usize,
    #[arg(long, default_value_t = 50)]
    batch: usize,
    /// containerd's pid file (for its RSS). Default: `containerd.pid` beside the endpoint\'s socket.
    #[arg(long)]
    containerd_pid: Option<PathBuf>,
}

const SCRIPT: &str = "trap 'exit 0' TERM; sleep 86400 & wait";

fn manifest(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: c\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"{SCRIPT}\"]\n"
    )
}

/// The summed RSS (bytes) of every process whose command line contains `needle`.
fn rss_of(needle: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .filter_map(|pid| procstat::rss_bytes(pid).ok())
        .sum()
}

fn podman(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("podman").args(args).output()?;
    if !out.status.success() {
        bail!("podman {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

struct Podman {
    dir: PathBuf,
}

impl Podman {
    fn file(&self, name: &str) -> anyhow::Result<PathBuf> {
        let f = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&f, manifest(name))?;
        Ok(f)
    }

    async fn play(&self, name: &str) -> anyhow::Result<Duration> {
        let f = self.file(name)?;
        let t0 = Instant::now();
        let f2 = f.clone();
        tokio::task::spawn_blocking(move || {
            podman(&["kube", "play", "--quiet", &f2.to_string_lossy()])
        })
        .await??;
        Ok(t0.elapsed())
    }

    async fn down(&self, name: &str) -> anyhow::Result<()> {
        let f = self.dir.join(format!("{name}.yaml"));
        tokio::task::spawn_blocking(move || podman(&["kube", "down", &f.to_string_lossy()])).await?
    }
}

/// Waits until `n` pods of the agent run (its status manager's count).
async fn agent_running(agent: &BenchAgent, n: u64) -> anyhow::Result<()> {
    let t0 = Instant::now();
    loop {
        let s = agent.actor_state("status-manager").await?;
        if s["by_phase"]["Running"].as_u64().unwrap_or(0) >= n {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!("{n} pods not running after 5 min");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One podvisor start, timed from outside (the status manager's count, polled every 5 ms);
/// then its removal, waited for.
async fn agent_single(agent: &BenchAgent, rt: &CriRuntime, i: usize) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    agent.write(&format!("one{i}"), &manifest(&format!("one{i}")))?;
    agent_running(agent, 1).await?;
    let took = t0.elapsed();
    agent.clear(rt).await?;
    while agent.actor_state("status-manager").await?["pods"].as_u64() != Some(0) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(took)
}

async fn floor_single(rt: &CriRuntime, i: usize, log_dir: &str) -> anyhow::Result<Duration> {
    let uid = format!("peer-floor-{}-{i}", std::process::id());
    let (pod, t) = floor::start_pod(rt.client(), &uid, false, log_dir).await?;
    floor::teardown_pod(rt.client(), &pod).await?;
    Ok(t.total())
}

async fn podman_single(p: &Podman, i: usize) -> anyhow::Result<Duration> {
    let name = format!("peer-one{i}");
    let took = p.play(&name).await?;
    p.down(&name).await?;
    Ok(took)
}

/// Single starts of the three, alternating (the floor, podvisor, podman, then again), so
/// the machine's drift hits all three alike; podvisor's also from its own log.
struct Singles {
    floor: Samples,
    agent: Samples,
    agent_logged: Samples,
    podman: Samples,
}

async fn singles(
    agent: &BenchAgent,
    rt: &CriRuntime,
    p: &Podman,
    (n, log_dir): (usize, &str),
) -> anyhow::Result<Singles> {
    let (mut floor, mut polled, mut podman) = (Samples::new(), Samples::new(), Samples::new());
    let mut written = std::collections::HashMap::new();
    for i in 0..n {
        floor.push(floor_single(rt, i, log_dir).await?);
        written.insert(
            format!("one{i}-{}", agent.node),
            podvisor_bench::hops::wall_now(),
        );
        polled.push(agent_single(agent, rt, i).await?);
        podman.push(podman_single(p, i).await?);
    }
    let agent_logged = podvisor_bench::hops::totals(&agent.dir.join("agent.log"), &written)?;
    Ok(Singles {
        floor,
        agent: polled,
        agent_logged,
        podman,
    })
}

/// `batch` pods played at once: the wall time, and the conmons' RSS while they run.
async fn podman_batch(p: &Podman, batch: usize) -> anyhow::Result<(Duration, u64)> {
    let names: Vec<String> = (0..batch).map(|i| format!("peer-b{i}")).collect();
    let t0 = Instant::now();
    let plays: Vec<anyhow::Result<Duration>> = futures_util::stream::iter(&names)
        .map(|n| p.play(n))
        .buffer_unordered(batch)
        .collect()
        .await;
    let wall = t0.elapsed();
    plays.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let conmon = rss_of("conmon");
    for n in &names {
        p.down(n).await?;
    }
    Ok((wall, conmon))
}

/// The podvisor stack's RSS: the agent, containerd and every shim.
fn stack_rss(agent: &BenchAgent, containerd: u32) -> u64 {
    procstat::rss_bytes(agent.child.id()).unwrap_or(0)
        + procstat::rss_bytes(containerd).unwrap_or(0)
        + rss_of("containerd-shim-runc-v2")
}

async fn agent_batch(
    agent: &BenchAgent,
    rt: &CriRuntime,
    batch: usize,
    containerd: u32,
) -> anyhow::Result<(Duration, u64, u64)> {
    let idle = stack_rss(agent, containerd);
    let t0 = Instant::now();
    for i in 0..batch {
        agent.write(&format!("b{i}"), &manifest(&format!("b{i}")))?;
    }
    agent_running(agent, batch as u64).await?;
    let wall = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let busy = stack_rss(agent, containerd);
    agent.clear(rt).await?;
    Ok((wall, idle, busy))
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::env::var("CONTAINERS_CONF").context(
        "CONTAINERS_CONF is not set: run crates/podvisor-bench/peer/podman-up and export what it prints",
    )?;
    let bin = args.agent.binary()?;
    let rt = CriRuntime::new(&args.runtime.endpoint, Timeouts::default())?;
    let v = rt.version().await.context("containerd")?;
    let containerd: u32 = podvisor_bench::args::containerd_pid(
        &args.runtime.endpoint,
        args.containerd_pid.as_deref(),
    )?;
    let dir = std::env::temp_dir().join(format!("peer-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let p = Podman { dir: dir.clone() };
    let log_dir = dir.to_string_lossy().into_owned();
    let podman_version = Command::new("podman").arg("--version").output()?;
    println!(
        "# peer-bench: {} {}; {}; {} single starts, {} at once\n",
        v.runtime_name,
        v.runtime_version,
        String::from_utf8_lossy(&podman_version.stdout).trim(),
        args.starts,
        args.batch
    );
    let agent = BenchAgent::start(
        &bin,
        "peer-bench",
        "peer",
        &args.runtime.endpoint,
        "",
        podvisor_bench::hops::FILTER,
    )?;
    agent.api().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let one = singles(&agent, &rt, &p, (args.starts, &log_dir)).await?;
    let (podman_wall, conmon) = podman_batch(&p, args.batch).await?;
    let (agent_wall, idle, busy) = agent_batch(&agent, &rt, args.batch, containerd).await?;
    let (floor_pods, floor_wall) = floor::start_pods_parallel(
        rt.client(),
        &format!("peer-batch-{}", std::process::id()),
        args.batch,
        podvisor_cri::client::default_mutations(),
        false,
        &log_dir,
    )
    .await?;
    floor::teardown_parallel(rt.client(), &floor_pods, 8).await?;
    println!("{}", Summary::HEADER);
    println!("{}", one.floor.summary().row("raw CRI: one pod (bridge)"));
    println!(
        "{}",
        one.agent.summary().row("podvisor: manifest → running")
    );
    let logged = one.agent_logged.summary();
    println!(
        "{}",
        logged.row("podvisor: the same starts, from its own log")
    );
    let podman = one.podman.summary();
    println!("{}", podman.row("podman kube play → returns, running"));
    println!("\n| {} pods at once | wall |\n|---|---:|", args.batch);
    for (what, wall) in [
        ("raw CRI (the agent's default bound in flight)", floor_wall),
        ("podvisor (manifests written together)", agent_wall),
        ("podman kube play (all at once)", podman_wall),
    ] {
        println!("| {what} | {:.2} s |", wall.as_secs_f64());
    }
    let n = args.batch as f64;
    println!(
        "\nmemory with {} pods running: podvisor stack (agent + containerd + shims) {:.1} MiB ({:.1} idle), {:.2} MiB per pod; podman's conmons {:.1} MiB, {:.2} MiB per pod",
        args.batch,
        mib(busy),
        mib(idle),
        mib(busy.saturating_sub(idle)) / n,
        mib(conmon),
        mib(conmon) / n
    );
    let _ = std::fs::remove_dir_all(Path::new(&dir));
    Ok(())
}
