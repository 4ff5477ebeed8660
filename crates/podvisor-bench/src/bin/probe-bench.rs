//! What probes cost: the same pods (busybox httpd) without probes, with an httpGet
//! readiness and liveness probe each at a 1 s period, and with exec probes instead, one
//! agent at a time against one containerd. For each: how long until every pod is Ready,
//! then over a window the agent's CPU and RSS, containerd's CPU, the probe runs per second
//! and how late the window's runs started after their due time (the prober's own histogram,
//! read before and after; its buckets follow a 1-2-5 series: a quantile is its bucket's
//! upper bound).
//!
//! scripts/containerd-up
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin probe-bench
//! target/release/probe-bench

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Parser;
use podvisor_actors::histogram::HistogramSnapshot;
use podvisor_bench::agent::BenchAgent;
use podvisor_bench::procstat;
use podvisor_cri::{CriRuntime, Runtime, Timeouts};

#[derive(Parser)]
struct Args {
    #[arg(
        long,
        default_value = "unix:///var/lib/podvisor-containerd/containerd.sock"
    )]
    endpoint: String,
    /// containerd's pid file (for its CPU time). Default: `containerd.pid` beside the endpoint\'s socket.
    #[arg(long)]
    containerd_pid: Option<PathBuf>,
    #[arg(long, default_value_t = 110)]
    pods: usize,
    /// Seconds over which CPU, memory and runs are measured.
    #[arg(long, default_value_t = 60)]
    window: u64,
    /// Which of `none`, `http`, `exec` to run, comma-separated.
    #[arg(long, default_value = "none,http,exec")]
    modes: String,
    /// The agent's `[probes] max_exec_in_flight` for the exec mode: one run per value.
    #[arg(long, default_value = "8")]
    exec_limits: String,
    /// The exec probes' `periodSeconds`.
    #[arg(long, default_value_t = 1)]
    exec_period: u32,
}

fn probes(mode: &str, exec_period: u32) -> String {
    let handler = match mode {
        "http" => "httpGet: {path: /ready, port: 8080}, periodSeconds: 1".to_string(),
        "exec" => format!("exec: {{command: [cat, /www/ready]}}, periodSeconds: {exec_period}"),
        _ => return String::new(),
    };
    format!("    readinessProbe: {{{handler}}}\n    livenessProbe: {{{handler}}}\n")
}

fn pod(name: &str, mode: &str, exec_period: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: web\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"mkdir -p /www && echo ok > /www/ready && exec httpd -f -p 8080 -h /www\"]\n{}",
        probes(mode, exec_period)
    )
}

/// How many of the agent's pods are Ready, as its API serves them.
async fn ready(agent: &BenchAgent) -> anyhow::Result<usize> {
    let api = agent.api().await?;
    let body = api.get("/api/v1/namespaces/default/pods").await?;
    let v: serde_json::Value = serde_json::from_str(&body)?;
    let items = v["items"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count())
}

struct Figures {
    all_ready: Duration,
    agent_cpu: f64,
    agent_rss_mib: f64,
    containerd_cpu: f64,
    runs_per_s: f64,
    failures: u64,
    late_p50_ms: f64,
    late_p99_ms: f64,
}

async fn measure(
    args: &Args,
    rt: &CriRuntime,
    mode: &str,
    exec_limit: usize,
    containerd: u32,
) -> anyhow::Result<Figures> {
    let bin = std::env::current_exe()?.with_file_name("podvisor");
    let extra = format!(
        "[allocatable]\npods = {}\n[probes]\nmax_exec_in_flight = {exec_limit}\n",
        args.pods + 10
    );
    let agent = BenchAgent::start(
        &bin,
        "podvisor-probe-bench",
        &format!("probes-{mode}"),
        &args.endpoint,
        &extra,
        "warn",
    )?;
    agent.api().await?;
    let t0 = Instant::now();
    for i in 0..args.pods {
        agent.write(
            &format!("p{i}"),
            &pod(&format!("p{i}"), mode, args.exec_period),
        )?;
    }
    while ready(&agent).await? < args.pods {
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("{mode}: not every pod Ready within 600 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all_ready = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await; // settle
    let pid = agent.child.id();
    let runs = |s: &serde_json::Value| s["runs"].as_u64().unwrap_or(0);
    let before = agent.actor_state("prober").await?;
    let (a0, c0) = (procstat::cpu_time(pid)?, procstat::cpu_time(containerd)?);
    let window = Duration::from_secs(args.window);
    tokio::time::sleep(window).await;
    let (a1, c1) = (procstat::cpu_time(pid)?, procstat::cpu_time(containerd)?);
    let after = agent.actor_state("prober").await?;
    let rss = procstat::rss_bytes(pid)? as f64 / (1024.0 * 1024.0);
    // How late the runs of the window started (not the start-up burst before it).
    let histogram = |s: &serde_json::Value| -> anyhow::Result<HistogramSnapshot> {
        Ok(serde_json::from_value(s["lateness_histogram"].clone())?)
    };
    let late = histogram(&after)?.since(&histogram(&before)?);
    let pct = |d: Duration| 100.0 * d.as_secs_f64() / window.as_secs_f64();
    let figures = Figures {
        all_ready,
        agent_cpu: pct(a1 - a0),
        agent_rss_mib: rss,
        containerd_cpu: pct(c1 - c0),
        runs_per_s: (runs(&after) - runs(&before)) as f64 / window.as_secs_f64(),
        failures: after["failures"].as_u64().unwrap_or(0),
        late_p50_ms: late.quantile(0.5).as_secs_f64() * 1e3,
        late_p99_ms: late.quantile(0.99).as_secs_f64() * 1e3,
    };
    agent.clear(rt).await?;
    Ok(figures)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = CriRuntime::new(&args.endpoint, Timeouts::default())?;
    let version = rt.version().await?.runtime_version;
    let containerd: u32 =
        podvisor_bench::args::containerd_pid(&args.endpoint, args.containerd_pid.as_deref())?;
    println!(
        "# probe-bench: containerd {version}, {} pods, {} s window\n",
        args.pods, args.window
    );
    println!(
        "| probes (each pod) | all Ready | agent CPU | agent RSS | containerd CPU | runs/s | failures | late p50 | late p99 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut runs = Vec::new();
    for mode in args.modes.split(',') {
        match mode {
            "exec" => {
                for limit in args.exec_limits.split(',') {
                    runs.push((mode, limit.trim().parse::<usize>()?));
                }
            }
            _ => runs.push((mode, 64)),
        }
    }
    for (mode, limit) in runs {
        let f = measure(&args, &rt, mode, limit, containerd).await?;
        let label = match mode {
            "http" => "httpGet readiness + liveness, 1 s".to_string(),
            "exec" => format!(
                "exec readiness + liveness, {} s, {limit} at once",
                args.exec_period
            ),
            _ => "none".to_string(),
        };
        println!(
            "| {label} | {:.1} s | {:.2} % | {:.1} MiB | {:.2} % | {:.0} | {} | ≤ {} ms | ≤ {} ms |",
            f.all_ready.as_secs_f64(),
            f.agent_cpu,
            f.agent_rss_mib,
            f.containerd_cpu,
            f.runs_per_s,
            f.failures,
            f.late_p50_ms,
            f.late_p99_ms
        );
    }
    Ok(())
}
