//! The node agent end to end, against containerd, side by side with the raw CRI floor in
//! the same run: (a) pod start latency, manifest written → every container running as
//! podvisor reports it, one pod at a time and 50 written at once; (b) container exit →
//! podvisor reports it; (c) the agent's RSS and CPU with 0, 50 and 100 pods.
//!
//! It runs the real release binary (`podvisor run`) in a private directory, with its own
//! node name, so it measures what a user runs and touches no other pods. "Reported" means
//! the status manager's "pod status changed" line in the agent's JSON log (the same update
//! the API serves, checked against the API once per pod): timing from the log costs the
//! agent nothing, where polling its API every few milliseconds would slow what is measured.
//!
//! scripts/containerd-up && cargo build --release --bin podvisor \
//!   && cargo run --release -p podvisor-bench --bin agent-bench

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use podvisor_bench::floor::{self, RawPod};
use podvisor_bench::procstat;
use podvisor_bench::stats::{Samples, Summary, ms};
use podvisor_cri::{CriClient, Timeouts};

const NODE: &str = "bench";

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    /// Single-pod starts measured, each for podvisor and the floor.
    #[arg(long, default_value_t = 30)]
    starts: usize,
    /// Pods written at once.
    #[arg(long, default_value_t = 50)]
    batch: usize,
    /// Batches measured, each for podvisor and the floor.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Container exits measured.
    #[arg(long, default_value_t = 20)]
    exits: usize,
    /// Seconds over which RSS and CPU are sampled at each pod count.
    #[arg(long, default_value_t = 20)]
    window: u64,
}

/// A `podvisor run` of our own; killed (pods left to the cleanup) if the bench fails.
struct AgentProcess {
    child: Child,
    /// The Kubernetes API, once it answers.
    kube: Option<podvisor_debug::client::Endpoint>,
    state: PathBuf,
    manifests: PathBuf,
    log: PathBuf,
}

impl AgentProcess {
    fn start(bin: &Path, dir: &Path, runtime: &str) -> anyhow::Result<Self> {
        let manifests = dir.join("manifests");
        let config = format!(
            "node_name = \"{NODE}\"\nruntime_endpoint = \"{runtime}\"\nmanifest_dir = \"{}\"\nstate_dir = \"{}\"\npod_log_dir = \"{}\"\n[debug]\naddress = \"127.0.0.1:0\"\n[api]\naddress = \"127.0.0.1:0\"\n[server]\naddress = \"127.0.0.1:0\"\n[log]\nformat = \"json\"\nfilter = \"{},{}\"\n",
            manifests.display(),
            dir.join("state").display(),
            dir.join("logs").display(),
            podvisor_bench::hops::FILTER,
            podvisor_bench::agent::SAYS_WHERE,
        );
        let child = podvisor_bench::agent::spawn(bin, dir, &config)?;
        let log_path = dir.join("agent.log");
        Ok(Self {
            child,
            kube: None,
            state: dir.join("state"),
            manifests,
            log: log_path,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the agent is ready and its Kubernetes API answers.
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let t0 = Instant::now();
        let kubeconfig = self.state.join("kubeconfig");
        loop {
            // Its ports are the kernel's pick (port 0): the log says which.
            let ready = match podvisor_bench::agent::logged_endpoint(&self.log) {
                Some(debug) => podvisor_debug::client::get(&debug, "/readyz", None)
                    .await
                    .is_ok(),
                None => false,
            };
            let kube = podvisor_debug::client::Endpoint::from_kubeconfig(&kubeconfig);
            if let (true, Ok(kube)) = (ready, kube)
                && kube.get("/api/v1/pods").await.is_ok()
            {
                self.kube = Some(kube);
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(30) {
                bail!("the agent was not ready within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn kube(&self) -> anyhow::Result<&podvisor_debug::client::Endpoint> {
        self.kube
            .as_ref()
            .context("the agent's API is not known yet")
    }

    /// Written to a hidden name and renamed, so the agent never reads half a file.
    fn write(&self, name: &str, yaml: &str) -> anyhow::Result<()> {
        let tmp = self.manifests.join(format!(".{name}.yaml.tmp"));
        std::fs::write(&tmp, yaml)?;
        std::fs::rename(&tmp, self.manifests.join(format!("{name}.yaml")))?;
        Ok(())
    }

    fn remove(&self, name: &str) -> anyhow::Result<()> {
        std::fs::remove_file(self.manifests.join(format!("{name}.yaml")))?;
        Ok(())
    }

    /// Every pod the API shows (static pods as their mirrors).
    async fn pods(&self) -> anyhow::Result<Vec<Pod>> {
        let body = self.kube()?.get("/api/v1/pods").await?;
        let v: serde_json::Value = serde_json::from_str(&body)?;
        Ok(serde_json::from_value(v["items"].clone())?)
    }

    /// The pod as the API shows it, `None` while the agent does not know it.
    async fn pod(&self, name: &str) -> Option<Pod> {
        let path = format!("/api/v1/namespaces/default/pods/{name}-{NODE}");
        let body = self.kube().ok()?.get(&path).await.ok()?;
        serde_json::from_str(&body).ok()
    }

    /// Waits (10 s at most) until the API shows every one of `names` as `shown` says: a
    /// check that the log tells what a user sees. The status reaches the store a moment
    /// after the status manager logs it (the status writer is asynchronous).
    async fn shows(
        &self,
        names: &[String],
        shown: fn(&Pod) -> bool,
        what: &str,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pods = self.pods().await?;
            let missing = names.iter().map(|n| format!("{n}-{NODE}")).find(|full| {
                !pods
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(full) && shown(p))
            });
            match missing {
                None => return Ok(()),
                Some(full) if Instant::now() >= deadline => {
                    bail!("the log says {full} is {what}, the API does not show it after 10 s")
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Removes every manifest and waits until the agent has no pod left.
    async fn clear(&self) -> anyhow::Result<()> {
        for e in std::fs::read_dir(&self.manifests)? {
            std::fs::remove_file(e?.path())?;
        }
        let t0 = Instant::now();
        while !self.pods().await?.is_empty() {
            if t0.elapsed() > Duration::from_secs(120) {
                bail!("pods still present 120 s after their manifests were removed");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    fn terminate(&mut self) {
        // SAFETY: kill(2) with a pid we spawned; no memory is involved.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pod whose one container waits; it leaves at once on SIGTERM, so teardown is quick.
fn sleeper(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"trap 'exit 0' TERM; sleep 3600 & wait\"]\n"
    )
}

/// A pod whose container exits with code 3 as soon as a line is written to `fifo`.
fn exiter(name: &str, dir: &Path) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"read line < /trigger/fifo; exit 3\"]\n    volumeMounts:\n    - {{name: trigger, mountPath: /trigger}}\n  volumes:\n  - name: trigger\n    hostPath: {{path: {}}}\n",
        dir.display()
    )
}

fn all_running(p: &Pod) -> bool {
    let Some(status) = &p.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status.container_statuses.as_ref().is_some_and(|cs| {
            !cs.is_empty()
                && cs
                    .iter()
                    .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        })
}

fn terminated(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .all(|c| c.state.as_ref().is_some_and(|s| s.terminated.is_some()))
        })
}

/// The agent's "pod status changed" lines, read as they are written.
struct StatusLog {
    path: PathBuf,
    offset: u64,
    partial: String,
    /// Per pod name: when (log time) it became each (phase, ready).
    seen: HashMap<String, Vec<(Timestamp, String, bool)>>,
}

impl StatusLog {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            offset: 0,
            partial: String::new(),
            seen: HashMap::new(),
        }
    }

    fn read(&mut self) -> anyhow::Result<()> {
        use std::io::{Read as _, Seek as _};
        let mut f = std::fs::File::open(&self.path)?;
        f.seek(std::io::SeekFrom::Start(self.offset))?;
        let mut buf = String::new();
        self.offset += f.read_to_string(&mut buf)? as u64;
        self.partial.push_str(&buf);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let f = &v["fields"];
            if f["message"] != "pod status changed" {
                continue;
            }
            let (Some(ts), Some(pod)) = (v["timestamp"].as_str(), f["pod"].as_str()) else {
                continue;
            };
            self.seen.entry(pod.to_string()).or_default().push((
                ts.parse()
                    .map_err(|e| anyhow::anyhow!("log timestamp {ts:?}: {e}"))?,
                f["phase"].as_str().unwrap_or("").to_string(),
                f["ready"].as_bool().unwrap_or(false),
            ));
        }
        Ok(())
    }

    /// When pod `name` (the agent's name for it) first satisfied `check` at or after `t0`.
    fn when(&self, name: &str, t0: Timestamp, check: fn(&str, bool) -> bool) -> Option<Duration> {
        self.seen.get(name)?.iter().find_map(|(ts, phase, ready)| {
            (*ts >= t0 && check(phase, *ready))
                .then(|| Duration::try_from(*ts - t0).ok())
                .flatten()
        })
    }

    /// Waits (reading the log every millisecond) until every pod in `names` satisfies
    /// `check`; each one's time from `t0`.
    async fn wait_all(
        &mut self,
        names: &[String],
        t0: Timestamp,
        check: fn(&str, bool) -> bool,
    ) -> anyhow::Result<Vec<Duration>> {
        let started = Instant::now();
        loop {
            self.read()?;
            let found: Vec<Duration> = names
                .iter()
                .filter_map(|n| self.when(&format!("{n}-{NODE}"), t0, check))
                .collect();
            if found.len() == names.len() {
                return Ok(found);
            }
            if started.elapsed() > Duration::from_secs(180) {
                bail!(
                    "{} of {} pods as expected after 180 s",
                    found.len(),
                    names.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Wall-clock now, comparable with the log's timestamps (same machine, same clock).
fn wall_now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::new(d.as_secs() as i64, d.subsec_nanos() as i32).unwrap_or_default()
}

fn ready(_: &str, ready: bool) -> bool {
    ready
}

fn failed(phase: &str, _: bool) -> bool {
    phase == "Failed"
}

struct Ctx {
    cri: CriClient,
    agent: AgentProcess,
    work: PathBuf,
    floor_logs: String,
    status: StatusLog,
    /// Floor pods started and not yet torn down (torn down on any exit).
    live: Vec<RawPod>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = args.agent.binary()?;
    let cri = CriClient::new(&args.runtime.endpoint, Timeouts::default())?;
    let version = cri.version().await.with_context(|| {
        format!(
            "is containerd running at {}? (scripts/containerd-up)",
            args.runtime.endpoint
        )
    })?;
    let work = std::env::temp_dir().join(format!("agent-bench-{}", std::process::id()));
    let floor_logs = work.join("floor-logs");
    std::fs::create_dir_all(&floor_logs)?;
    let mut agent = AgentProcess::start(&bin, &work.join("agent"), &args.runtime.endpoint)?;
    agent.wait_ready().await?;
    println!(
        "# agent-bench: {} against {} {} (bridge network, one busybox container per pod)\n",
        bin.display(),
        version.runtime_name,
        version.runtime_version
    );
    let mut ctx = Ctx {
        cri,
        status: StatusLog::new(&agent.log),
        agent,
        work: work.clone(),
        floor_logs: floor_logs.to_string_lossy().into_owned(),
        live: Vec::new(),
    };
    let result = run(&mut ctx, &args).await;
    for pod in std::mem::take(&mut ctx.live) {
        let _ = floor::teardown_pod(&ctx.cri, &pod).await;
    }
    let cleared = ctx.agent.clear().await;
    ctx.agent.terminate();
    if result.is_ok() && cleared.is_ok() {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        eprintln!(
            "agent log kept in {}",
            work.join("agent/agent.log").display()
        );
    }
    result.and(cleared)
}

async fn run(ctx: &mut Ctx, args: &Args) -> anyhow::Result<()> {
    let mut figures = vec![resources(&ctx.agent, 0, args.window).await?];
    single_starts(ctx, args.starts).await?;
    batches(ctx, args.batch, args.rounds).await?;
    figures.push(resources(&ctx.agent, args.batch, args.window).await?);
    // Another batch on top: the pods are left running for the second measurement.
    let names: Vec<String> = (0..args.batch).map(|i| format!("more-{i}")).collect();
    start_batch(ctx, &names).await?;
    figures.push(resources(&ctx.agent, 2 * args.batch, args.window).await?);
    exits(ctx, args.exits).await?;
    println!(
        "## (c) agent resources, idle pods (sampled over {} s, nothing polling)\n",
        args.window
    );
    println!("| pods | RSS MiB | peak RSS MiB | CPU % of one core |\n|---:|---:|---:|---:|");
    for r in &figures {
        println!("{r}");
    }
    println!();
    Ok(())
}

/// (a) One pod at a time, podvisor and the floor alternating so drift hits both; then
/// where podvisor's time went, hop by hop, beside the floor's two parts.
async fn single_starts(ctx: &mut Ctx, n: usize) -> anyhow::Result<()> {
    let (mut pv, mut raw) = (Samples::new(), Samples::new());
    let (mut sandbox, mut container) = (Samples::new(), Samples::new());
    let mut written = HashMap::new();
    for i in 0..n {
        let name = format!("single-{i}");
        written.insert(format!("{name}-{NODE}"), wall_now());
        pv.push(start_batch(ctx, std::slice::from_ref(&name)).await?[0]);
        ctx.agent.remove(&name)?;
        // Its teardown must not overlap the next start, podvisor's or the floor's.
        while ctx.agent.pod(&name).await.is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let (pod, start) =
            floor::start_pod(&ctx.cri, &format!("floor-{i}"), false, &ctx.floor_logs).await?;
        raw.push(start.total());
        sandbox.push(start.sandbox);
        container.push(start.container);
        floor::teardown_pod(&ctx.cri, &pod).await?;
    }
    println!("## (a) pod start, one at a time: manifest written → all containers running\n");
    print_pair(
        "podvisor (as it reports it)",
        &pv,
        "raw CRI floor (RunPodSandbox + CreateContainer + StartContainer)",
        &raw,
    );
    let hops = podvisor_bench::hops::hops(&ctx.agent.log, &written)?;
    println!(
        "### where podvisor's start goes, from its log\n\n{}",
        Summary::HEADER
    );
    for (name, s) in podvisor_bench::hops::HOPS.iter().zip(&hops) {
        println!("{}", s.summary().row(name));
    }
    println!(
        "{}\n{}\n",
        sandbox.summary().row("floor: RunPodSandbox"),
        container
            .summary()
            .row("floor: CreateContainer + StartContainer")
    );
    Ok(())
}

/// (a) `batch` pods written at once; each pod's latency counts from the first write.
async fn batches(ctx: &mut Ctx, batch: usize, rounds: usize) -> anyhow::Result<()> {
    let (mut pv, mut raw) = (Samples::new(), Samples::new());
    let (mut pv_wall, mut raw_wall) = (Samples::new(), Samples::new());
    for round in 0..rounds {
        let names: Vec<String> = (0..batch).map(|i| format!("batch{round}-{i}")).collect();
        let times = start_batch(ctx, &names).await?;
        pv_wall.push(times.iter().max().copied().unwrap_or_default());
        times.into_iter().for_each(|t| pv.push(t));
        // The last round's pods stay: they are the 50 of the resource figures.
        if round + 1 < rounds {
            ctx.agent.clear().await?;
        }

        let t0 = Instant::now();
        let (cri, logs) = (&ctx.cri, ctx.floor_logs.as_str());
        let results: Vec<_> = futures_util::stream::iter(0..batch)
            .map(|i| async move {
                let r = floor::start_pod(cri, &format!("floor-b{round}-{i}"), false, logs).await;
                (r, t0.elapsed())
            })
            .buffer_unordered(batch)
            .collect()
            .await;
        let mut wall = Duration::ZERO;
        for (r, at) in results {
            ctx.live.push(r?.0);
            raw.push(at);
            wall = wall.max(at);
        }
        raw_wall.push(wall);
        let live = std::mem::take(&mut ctx.live);
        futures_util::stream::iter(live.iter())
            .map(|p| floor::teardown_pod(&ctx.cri, p))
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
    }
    println!(
        "## (a) {batch} pods written at once, {rounds} rounds: each pod's time from the first write to running\n"
    );
    print_pair(
        "podvisor, per pod",
        &pv,
        &format!("raw CRI floor, per pod ({batch} starts in flight)"),
        &raw,
    );
    println!(
        "{}\n{}\n{}\n",
        Summary::HEADER,
        pv_wall.summary().row("podvisor, until the last pod"),
        raw_wall.summary().row("raw CRI floor, until the last pod")
    );
    Ok(())
}

/// Writes one manifest per name and waits until every pod is reported ready (all its
/// containers running); each pod's time from the first write. Then checks that the API
/// agrees, so the log is known to tell what a user sees.
async fn start_batch(ctx: &mut Ctx, names: &[String]) -> anyhow::Result<Vec<Duration>> {
    let t0 = wall_now();
    for n in names {
        ctx.agent.write(n, &sleeper(n))?;
    }
    let times = ctx.status.wait_all(names, t0, ready).await?;
    ctx.agent.shows(names, all_running, "running").await?;
    Ok(times)
}

/// (b) A running container exits (released through a FIFO, so the exit moment is known);
/// how long until podvisor reports the pod Failed (exit code 3, restartPolicy Never).
async fn exits(ctx: &mut Ctx, n: usize) -> anyhow::Result<()> {
    let mut seen = Samples::new();
    let mut jitter = XorShift::seeded();
    for i in 0..n {
        let dir = ctx.work.join(format!("trigger-{i}"));
        std::fs::create_dir_all(&dir)?;
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes())?;
        // SAFETY: mkfifo reads a NUL-terminated path we own.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            bail!(
                "mkfifo {}: {}",
                fifo.display(),
                std::io::Error::last_os_error()
            );
        }
        let name = format!("exit-{i}");
        ctx.agent.write(&name, &exiter(&name, &dir))?;
        ctx.status
            .wait_all(std::slice::from_ref(&name), wall_now(), ready)
            .await?;
        // The loop would otherwise trigger every exit at the same point of the PLEG's
        // relist cycle (each iteration starts just after a relist saw the last exit); a
        // random wait over one period samples the cycle evenly, as real crashes do.
        tokio::time::sleep(Duration::from_millis(jitter.next() % 1000)).await;
        // Opening for writing completes once the container has it open for reading, which
        // it does as soon as it runs; the line releases it.
        let t0 = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::task::spawn_blocking(move || -> std::io::Result<Timestamp> {
                use std::io::Write as _;
                let mut f = std::fs::OpenOptions::new().write(true).open(&fifo)?;
                let t0 = wall_now();
                f.write_all(b"go\n")?;
                Ok(t0)
            }),
        )
        .await
        .context("the container never opened its FIFO")???;
        seen.push(
            ctx.status
                .wait_all(std::slice::from_ref(&name), t0, failed)
                .await?[0],
        );
        ctx.agent
            .shows(std::slice::from_ref(&name), terminated, "failed")
            .await?;
        ctx.agent.remove(&name)?;
    }
    println!("## (b) container exit → podvisor reports it (relist_period 1 s, the default)\n");
    println!("{}\n{}\n", Summary::HEADER, seen.summary().row("podvisor"));
    Ok(())
}

/// Enough randomness for spreading waits; not worth a dependency.
struct XorShift(u64);

impl XorShift {
    fn seeded() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        Self(nanos | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn print_pair(a_what: &str, a: &Samples, b_what: &str, b: &Samples) {
    let (sa, sb) = (a.summary(), b.summary());
    println!(
        "{}\n{}\n{}\n",
        Summary::HEADER,
        sa.row(a_what),
        sb.row(b_what)
    );
    println!(
        "overhead over the floor: p50 {} ms, p99 {} ms\n",
        signed_ms(sa.p50, sb.p50),
        signed_ms(sa.p99, sb.p99)
    );
}

fn signed_ms(a: Duration, b: Duration) -> String {
    if a >= b {
        format!("+{}", ms(a - b))
    } else {
        format!("-{}", ms(b - a))
    }
}

/// Settles, then samples RSS and CPU over `window` seconds with nothing asking the agent
/// anything: what its own loops (relist, resync, housekeeping, rescans) cost.
async fn resources(agent: &AgentProcess, pods: usize, window: u64) -> anyhow::Result<String> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pid = agent.pid();
    let (cpu0, t0) = (procstat::cpu_time(pid)?, Instant::now());
    let mut rss = Vec::new();
    for _ in 0..window {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss.push(procstat::rss_bytes(pid)?);
    }
    let cpu = procstat::cpu_time(pid)? - cpu0;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let median = {
        rss.sort();
        rss[rss.len() / 2]
    };
    Ok(format!(
        "| {pods} | {:.1} | {:.1} | {:.2} |",
        mib(median),
        mib(procstat::peak_rss_bytes(pid)?),
        100.0 * cpu.as_secs_f64() / t0.elapsed().as_secs_f64()
    ))
}
