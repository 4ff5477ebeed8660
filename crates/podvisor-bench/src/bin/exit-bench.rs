//! Container exit → the status the API serves, relisting (every 1 s) against evented, side
//! by side in one run on a runtime that streams container events (containerd 1.7), and
//! the agent's and containerd's CPU with 110 idle pods in each mode.
//!
//! Two agents (the release `podvisor run`, each with its own node name and directories)
//! run at once: one with `[pleg] mode = "relist"`, one with the default evented PLEG (the
//! only subscriber of the runtime's event stream). Each gets the same pods in rounds; every
//! pod's container sleeps a random 1–4 s and exits, so exits land at every phase of the
//! relist period. A watch on each agent's API records when the exit first shows in the
//! pod's status; the latency is that moment minus the runtime's own `finishedAt` (CRI
//! ContainerStatus, nanoseconds), both on this machine's clock. A pod restarts after its
//! exit (restartPolicy Always, then the 10 s crash-loop back-off), so the exited container
//! stays in the runtime to be asked.
//!
//! PODVISOR_CONTAINERD_VERSION=1.7 scripts/containerd-up
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin exit-bench
//! target/release/exit-bench --endpoint unix:///var/lib/podvisor-containerd-1.7/containerd.sock

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use clap::Parser;
use podvisor_bench::agent::BenchAgent as Agent;
use podvisor_bench::procstat;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_cri::{CriRuntime, Runtime, Timeouts};
use podvisor_debug::client::Endpoint;

#[derive(Parser)]
struct Args {
    #[arg(
        long,
        default_value = "unix:///var/lib/podvisor-containerd-1.7/containerd.sock"
    )]
    endpoint: String,
    /// containerd's pid file (for its CPU time). Default: `containerd.pid` beside the endpoint\'s socket.
    #[arg(long)]
    containerd_pid: Option<PathBuf>,
    /// Rounds of exits; each round starts `per_round` pods on each agent.
    #[arg(long, default_value_t = 6)]
    rounds: usize,
    #[arg(long, default_value_t = 10)]
    per_round: usize,
    /// Idle pods for the CPU figures, per mode.
    #[arg(long, default_value_t = 110)]
    idle_pods: usize,
    /// Seconds over which CPU is sampled.
    #[arg(long, default_value_t = 60)]
    window: u64,
    /// Also write each exit as `mode,pod,container,finishedAt ns,seen ns` (wall clock) to
    /// this file, to lay beside the agents' logs.
    #[arg(long)]
    details: Option<PathBuf>,
}

/// The agent of one mode: its PLEG mode and room for the idle pods; `log`, its filter.
fn start_agent(
    bin: &Path,
    runtime: &str,
    node: &str,
    pleg: &str,
    log: &str,
) -> anyhow::Result<Agent> {
    let extra = format!("[allocatable]\npods = 200\n[pleg]\nmode = \"{pleg}\"\n");
    Agent::start(bin, "podvisor-exit-bench", node, runtime, &extra, log)
}

/// What the evented agent logs of each container event (its debug line): when containerd
/// made the event (its `created_at`), by container ID.
const EVENT_LOG: &str = "warn,podvisor_kubelet::pleg::events=debug";

fn event_times(log: &Path) -> anyhow::Result<HashMap<String, i64>> {
    let mut out = HashMap::new();
    for line in std::fs::read_to_string(log)?.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let f = &v["fields"];
        let stop = f["message"] == "container event"
            && f["kind"].as_str().is_some_and(|k| k.contains("Stop"));
        if let (true, Some(id), Some(at)) =
            (stop, f["container_id"].as_str(), f["created_at"].as_i64())
        {
            out.entry(id.to_string()).or_insert(at);
        }
    }
    Ok(out)
}

/// The evented exits split at the moment containerd made the event: the runtime's share
/// (exit → event) and podvisor's (event → the status a watcher sees).
fn split(m: &Mode) -> anyhow::Result<(Samples, Samples)> {
    let made = event_times(&m.agent.dir.join("agent.log"))?;
    let (mut runtime, mut ours) = (Samples::new(), Samples::new());
    for (id, done, seen) in &m.exits {
        if let Some(at) = made.get(id) {
            runtime.push(Duration::from_nanos((at - done).max(0) as u64));
            ours.push(Duration::from_nanos((seen - at).max(0) as u64));
        }
    }
    Ok((runtime, ours))
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// When each pod's exit first showed in a watch event (ns since the epoch), by pod name.
type Seen = Arc<Mutex<HashMap<String, i64>>>;

/// Watches the agent's pods; records the first event in which a pod's container shows
/// an exit (its state or last state terminated).
fn watch(api: Endpoint) -> Seen {
    let seen = Seen::default();
    let out = seen.clone();
    tokio::spawn(async move {
        let mut pending = Vec::new();
        let _ = api
            .get_stream("/api/v1/namespaces/default/pods?watch=1", |bytes| {
                let at = now_ns();
                pending.extend_from_slice(bytes);
                while let Some(i) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=i).collect();
                    if let Some(name) = exited(&line) {
                        out.lock().unwrap().entry(name).or_insert(at);
                    }
                }
            })
            .await;
    });
    seen
}

fn exited(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let pod = &v["object"];
    let c = pod["status"]["containerStatuses"].get(0)?;
    let done = c["state"]["terminated"].is_object() || c["lastState"]["terminated"].is_object();
    done.then(|| pod["metadata"]["name"].as_str().map(String::from))?
}

/// A tiny xorshift: random enough for spreading exits, reproducible with the seed printed.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn exiter(name: &str, sleep: f64) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"sleep {sleep:.3}; exit 3\"]\n"
    )
}

fn idler(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sleep, \"3600\"]\n"
    )
}

/// The runtime's `finishedAt` of the first (exited) container of each of `node`'s pods,
/// by pod name.
/// Each pod's first container: its ID and when it finished (CRI, nanoseconds).
async fn finished_at(
    rt: &CriRuntime,
    node: &str,
) -> anyhow::Result<HashMap<String, (String, i64)>> {
    let mut out = HashMap::new();
    for p in rt.list_pods().await? {
        if !podvisor_cri::labels::owned_by(&p, node) {
            continue;
        }
        for c in &p.containers {
            let s = rt.container_status(&c.id).await?;
            if c.attempt == 0 && s.finished_at > 0 {
                out.insert(p.pod.name.clone(), (c.id.clone(), s.finished_at));
            }
        }
    }
    Ok(out)
}

struct Mode {
    label: &'static str,
    agent: Agent,
    seen: Seen,
    samples: Samples,
    /// Container ID, finishedAt and seen (ns) of every exit.
    exits: Vec<(String, i64, i64)>,
}

async fn exit_rounds(
    rt: &CriRuntime,
    modes: &mut [Mode],
    args: &Args,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    for round in 0..args.rounds {
        let sleeps: Vec<f64> = (0..args.per_round)
            .map(|_| 1.0 + 3.0 * rng.next_f64())
            .collect();
        for m in modes.iter() {
            for (i, s) in sleeps.iter().enumerate() {
                m.agent.write(
                    &format!("x{round}-{i}"),
                    &exiter(&format!("x{round}-{i}"), *s),
                )?;
            }
        }
        let t0 = Instant::now();
        for m in modes.iter_mut() {
            let names: Vec<String> = (0..args.per_round)
                .map(|i| format!("x{round}-{i}-{}", m.agent.node))
                .collect();
            while names
                .iter()
                .any(|n| !m.seen.lock().unwrap().contains_key(n))
            {
                if t0.elapsed() > Duration::from_secs(60) {
                    bail!("{}: exits not all seen within 60 s", m.label);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let finished = finished_at(rt, &m.agent.node).await?;
            for n in &names {
                let (Some(seen), Some((id, done))) =
                    (m.seen.lock().unwrap().get(n).copied(), finished.get(n))
                else {
                    bail!("{}: no finishedAt for {n}", m.label);
                };
                m.samples
                    .push(Duration::from_nanos((seen - done).max(0) as u64));
                m.exits.push((id.clone(), *done, seen));
                if let Some(path) = &args.details {
                    use std::io::Write as _;
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)?;
                    writeln!(f, "{},{n},{id},{done},{seen}", m.label)?;
                }
            }
        }
        for m in modes.iter() {
            m.agent.clear(rt).await?;
        }
        eprintln!("round {} of {} done", round + 1, args.rounds);
    }
    Ok(())
}

/// CPU of the agent and of containerd over `window` with `n` idle pods on the agent.
async fn idle_cpu(
    rt: &CriRuntime,
    agent: &Agent,
    n: usize,
    containerd: u32,
    window: Duration,
) -> anyhow::Result<(f64, f64)> {
    for i in 0..n {
        agent.write(&format!("idle{i}"), &idler(&format!("idle{i}")))?;
    }
    let t0 = Instant::now();
    loop {
        let running = rt
            .list_pods()
            .await?
            .iter()
            .filter(|p| podvisor_cri::labels::owned_by(p, &agent.node))
            .filter(|p| {
                p.containers
                    .iter()
                    .any(|c| c.state == podvisor_cri::ContainerState::Running)
            })
            .count();
        if running == n {
            break;
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!(
                "{}: {running} of {n} idle pods running after 300 s",
                agent.node
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(10)).await; // settle
    let pid = agent.child.id();
    let (a0, c0) = (procstat::cpu_time(pid)?, procstat::cpu_time(containerd)?);
    tokio::time::sleep(window).await;
    let (a1, c1) = (procstat::cpu_time(pid)?, procstat::cpu_time(containerd)?);
    let pct = |d: Duration| 100.0 * d.as_secs_f64() / window.as_secs_f64();
    let out = (pct(a1 - a0), pct(c1 - c0));
    agent.clear(rt).await?;
    Ok(out)
}

fn podvisor_bin() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    Ok(me.with_file_name("podvisor"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = CriRuntime::new(&args.endpoint, Timeouts::default())?;
    let version = rt.version().await?.runtime_version;
    let bin = podvisor_bin()?;
    let seed = now_ns() as u64 | 1;
    println!("# exit-bench: containerd {version}, seed {seed}\n");

    let mut modes = Vec::new();
    for (label, pleg, log) in [
        ("relist (1 s)", "relist", "warn"),
        ("evented", "evented", EVENT_LOG),
    ] {
        let agent = start_agent(&bin, &args.endpoint, &format!("exit-{pleg}"), pleg, log)?;
        let seen = watch(agent.api().await?);
        modes.push(Mode {
            label,
            agent,
            seen,
            samples: Samples::new(),
            exits: Vec::new(),
        });
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    exit_rounds(&rt, &mut modes, &args, seed).await?;
    println!(
        "## container exit (runtime finishedAt) → exit in the status served by the API (watch)\n"
    );
    println!("{}", Summary::HEADER);
    for m in &modes {
        println!("{}", m.samples.summary().row(m.label));
    }
    let (runtime, ours) = split(&modes[1])?;
    println!(
        "\n## evented, split where containerd made the event (its created_at)\n\n{}",
        Summary::HEADER
    );
    println!(
        "{}",
        runtime.summary().row("exit → event made (containerd)")
    );
    println!(
        "{}",
        ours.summary().row("event made → status seen (podvisor)")
    );

    drop(modes);

    // One agent at a time, so containerd's CPU is this agent's doing alone.
    let containerd: u32 =
        podvisor_bench::args::containerd_pid(&args.endpoint, args.containerd_pid.as_deref())?;
    let window = Duration::from_secs(args.window);
    println!(
        "\n## CPU with {} idle pods, over {} s (% of one core)\n",
        args.idle_pods, args.window
    );
    println!("| PLEG | agent | containerd |\n|---|---:|---:|");
    for (label, pleg) in [("relist (1 s)", "relist"), ("evented", "evented")] {
        let agent = start_agent(&bin, &args.endpoint, &format!("idle-{pleg}"), pleg, "warn")?;
        agent.api().await?;
        let (a, c) = idle_cpu(&rt, &agent, args.idle_pods, containerd, window).await?;
        println!("| {label} | {a:.2} % | {c:.2} % |");
    }
    Ok(())
}
