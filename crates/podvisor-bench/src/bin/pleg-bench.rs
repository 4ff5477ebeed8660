//! PLEG figures: (a) container exit → ContainerDied at a subscriber, relisting every 1 s and
//! every 100 ms, against containerd; (b) relist cost with 10/100/500 fake pods and with
//! real pods in containerd, and the diff step alone; (c) pod status after a change via a
//! targeted re-inspection vs waiting for the next relist, same run.
//!
//! scripts/containerd-up && cargo run --release -p podvisor-bench --bin pleg-bench

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use anyhow::Context as _;
use clap::Parser;
use podvisor_actors::{
    ActorRef, ChildSpec, Registry, Shutdown, StartInfo, SupervisedActor, Supervisor,
    SupervisorConfig, start_root,
};
use podvisor_bench::cpu::process_cpu;
use podvisor_bench::stats::{Samples, Summary};
use podvisor_core::PodUid;
use podvisor_cri::sample::{container_config, sandbox_config};
use podvisor_cri::{CriRuntime, FakeRuntime, Runtime, Timeouts};
use podvisor_kubelet::groups::{StatusGroup, StatusWiring, status_group};
use podvisor_kubelet::pleg::{PlegConfig, PodRecords};
use podvisor_kubelet::protocol::cache::{GetNewerThan, Need};
use podvisor_kubelet::protocol::lifecycle::{
    PlegEventKind, PodLifecycleEvent, Reinspect, RelistNow,
};

#[derive(Parser)]
struct Args {
    #[arg(
        long,
        default_value = "unix:///var/lib/podvisor-containerd/containerd.sock"
    )]
    endpoint: String,
    /// Container exits measured per relist period.
    #[arg(long, default_value_t = 50)]
    exits: usize,
    /// Real pods present for the containerd relist figure.
    #[arg(long, default_value_t = 50)]
    real_pods: usize,
    /// Samples of (c), per method.
    #[arg(long, default_value_t = 20)]
    freshness: usize,
}

/// Records when each lifecycle event arrived (wall clock, to compare with containerd's
/// `finished_at`).
struct Stopwatch(Arc<Mutex<Vec<(PodLifecycleEvent, i64)>>>);

impl Actor for Stopwatch {
    type Context = Context<Self>;
}

impl SupervisedActor for Stopwatch {
    const KIND: &'static str = "stopwatch";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

impl Handler<PodLifecycleEvent> for Stopwatch {
    type Result = ();
    fn handle(&mut self, e: PodLifecycleEvent, _: &mut Context<Self>) {
        self.0.lock().unwrap().push((e, unix_ns()));
    }
}

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

type Seen = Arc<Mutex<Vec<(PodLifecycleEvent, i64)>>>;

/// A running status group; `Drop` takes its whole tree down so it stops relisting.
struct Running {
    group: StatusGroup,
    root: ActorRef<Supervisor>,
}

impl std::ops::Deref for Running {
    type Target = StatusGroup;
    fn deref(&self) -> &StatusGroup {
        &self.group
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.root.do_send(Shutdown);
    }
}

fn start_group(runtime: Arc<dyn Runtime>, period: Duration) -> (Running, Seen) {
    let registry = Registry::new();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let (watch, watch_spec) = ChildSpec::of(move || Stopwatch(s.clone()))
        .capacity(1 << 16)
        .build();
    let config = PlegConfig {
        relist_period: period,
        ..PlegConfig::default()
    };
    let wiring = StatusWiring {
        runtime,
        events: vec![watch.recipient()],
        statuses: Vec::new(),
        pleg: config,
    };
    let group = status_group(&registry, wiring, SupervisorConfig::default());
    let spec = group.spec.clone();
    let root = start_root(
        "bench",
        SupervisorConfig::default(),
        registry,
        vec![watch_spec, spec],
        |e| panic!("escalated: {e:?}"),
    );
    (Running { group, root }, seen)
}

async fn wait_for(
    what: &str,
    limit: Duration,
    mut cond: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while !cond() {
        anyhow::ensure!(t0.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Pods of `per_pod` containers that exit at staggered times; returns exit → event latencies.
async fn exit_latency(
    rt: &CriRuntime,
    period: Duration,
    exits: usize,
    log_dir: &str,
) -> anyhow::Result<Samples> {
    let (group, seen) = start_group(Arc::new(rt.clone()), period);
    let per_pod = 5;
    let pods = exits.div_ceil(per_pod);
    let tag = format!("pleg-bench-{}-{}", std::process::id(), period.as_millis());
    let mut sandboxes = Vec::new();
    let mut ids = Vec::new();
    let result = async {
        for p in 0..pods {
            let uid = format!("{tag}-{p}");
            let sb = sandbox_config(&uid, &uid, true, log_dir);
            let sandbox = rt.run_sandbox(&sb).await?;
            sandboxes.push(sandbox.clone());
            for c in 0..per_pod.min(exits - ids.len()) {
                // Spread the exits over a few relist periods so they land at every phase.
                let delay =
                    1.0 + (p * per_pod + c) as f64 * 3.0 * period.as_secs_f64() / exits as f64;
                let cmd = format!("sleep {delay:.3}");
                let cfg = container_config(&sb, &format!("c{c}"), &["/bin/sh", "-c", &cmd]);
                let id = rt.create_container(&sandbox, &cfg, &sb).await?;
                rt.start_container(&id).await?;
                ids.push(id);
            }
        }
        let want: std::collections::HashSet<&String> = ids.iter().collect();
        wait_for("all ContainerDied events", Duration::from_secs(120), || {
            let seen = seen.lock().unwrap();
            seen.iter()
                .filter(|(e, _)| e.kind == PlegEventKind::ContainerDied && want.contains(&e.id))
                .count()
                >= want.len()
        })
        .await?;
        let received: HashMap<String, i64> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(e, _)| e.kind == PlegEventKind::ContainerDied)
            .map(|(e, at)| (e.id.clone(), *at))
            .collect();
        let mut samples = Samples::new();
        for id in &ids {
            let finished = rt.container_status(id).await?.finished_at;
            let lat = received[id] - finished;
            samples.push(Duration::from_nanos(lat.max(0) as u64));
        }
        anyhow::Ok(samples)
    }
    .await;
    drop(group);
    for s in sandboxes {
        let _ = rt.stop_sandbox(&s).await;
        let _ = rt.remove_sandbox(&s).await;
    }
    result
}

/// Relist cost with `pods` pods of two containers each in the fake runtime.
async fn fake_relists(pods: usize) -> anyhow::Result<(Summary, Summary, Summary, Duration)> {
    let fake = FakeRuntime::new();
    for p in 0..pods {
        let uid = format!("fake-{p}");
        let sb = sandbox_config(&uid, &uid, true, "/logs");
        let sandbox = fake.run_sandbox(&sb).await?;
        for c in ["app", "sidecar"] {
            let id = fake
                .create_container(&sandbox, &container_config(&sb, c, &[]), &sb)
                .await?;
            fake.start_container(&id).await?;
        }
    }
    let (group, _) = start_group(Arc::new(fake.clone()), Duration::from_secs(3600));
    group.pleg.send(RelistNow).await??;
    let (mut whole, cpu0) = (Samples::new(), process_cpu());
    for _ in 0..200 {
        let t0 = Instant::now();
        group.pleg.send(RelistNow).await??;
        whole.push(t0.elapsed());
    }
    let cpu = (process_cpu() - cpu0) / 200;
    // The comparison step alone: records diff of an unchanged listing.
    let listing = fake.list_pods().await?;
    let mut records = PodRecords::default();
    records.set_current(listing.clone());
    for (uid, _) in records.changes(|_| false) {
        records.update(&uid);
    }
    let (mut ingest_and_diff, mut diff) = (Samples::new(), Samples::new());
    for _ in 0..200 {
        let copy = listing.clone();
        // Exactly what a relist does between listing and inspecting: take the listing in,
        // then compare old and current records.
        let t0 = Instant::now();
        records.set_current(copy);
        let t1 = Instant::now();
        let changed = records.changes(|_| false);
        let t2 = Instant::now();
        ingest_and_diff.push(t2 - t0);
        diff.push(t2 - t1);
        assert!(changed.is_empty());
    }
    Ok((
        whole.summary(),
        ingest_and_diff.summary(),
        diff.summary(),
        cpu,
    ))
}

/// CPU time used so far by the development containerd (read from /proc), if found.
fn containerd_cpu() -> Option<Duration> {
    let dir = std::env::var("PODVISOR_CONTAINERD_DIR")
        .unwrap_or_else(|_| "/var/lib/podvisor-containerd".into());
    let pid: u32 = std::fs::read_to_string(format!("{dir}/containerd.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    // After the command name: state is field 0, utime 11, stime 12.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Some(Duration::from_millis(ticks * 1000 / hz.max(1)))
}

async fn real_relists(
    rt: &CriRuntime,
    pods: usize,
    log_dir: &str,
) -> anyhow::Result<(Summary, Duration, Option<Duration>)> {
    let cri = rt.client().clone();
    let (raw, _) = podvisor_bench::floor::start_pods_parallel(
        &cri,
        &format!("pleg-bench-list-{}", std::process::id()),
        pods,
        4,
        true,
        log_dir,
    )
    .await?;
    let result = async {
        let (group, _) = start_group(Arc::new(rt.clone()), Duration::from_secs(3600));
        group.pleg.send(RelistNow).await??;
        let (mut s, cpu0, theirs0) = (Samples::new(), process_cpu(), containerd_cpu());
        for _ in 0..200 {
            let t0 = Instant::now();
            group.pleg.send(RelistNow).await??;
            s.push(t0.elapsed());
        }
        let theirs = theirs0.zip(containerd_cpu()).map(|(a, b)| (b - a) / 200);
        anyhow::Ok((s.summary(), (process_cpu() - cpu0) / 200, theirs))
    }
    .await;
    for p in &raw {
        let _ = podvisor_bench::floor::teardown_pod(&cri, p).await;
    }
    result
}

/// After a container is stopped: how long until the cache holds the exit, with a targeted
/// re-inspection vs waiting for the next 1 s relist.
async fn freshness(
    rt: &CriRuntime,
    samples: usize,
    log_dir: &str,
) -> anyhow::Result<(Summary, Summary)> {
    let (group, _) = start_group(Arc::new(rt.clone()), Duration::from_secs(1));
    let uid = PodUid::from(format!("pleg-bench-fresh-{}", std::process::id()));
    let sb = sandbox_config(&uid, &uid, true, log_dir);
    let sandbox = rt.run_sandbox(&sb).await?;
    let result = async {
        let (mut targeted, mut waited) = (Samples::new(), Samples::new());
        for i in 0..samples * 2 {
            let cfg = container_config(&sb, &format!("f{i}"), &["/bin/sleep", "3600"]);
            let id = rt.create_container(&sandbox, &cfg, &sb).await?;
            rt.start_container(&id).await?;
            // Let a relist see it running, at a random phase of the period.
            tokio::time::sleep(Duration::from_millis(1100 + (i as u64 * 137) % 900)).await;
            rt.stop_container(&id, Duration::ZERO).await?;
            let stopped = tokio::time::Instant::now();
            let rx = group
                .cache
                .send(GetNewerThan {
                    uid: uid.clone(),
                    need: Need::newer_than(Some(stopped)),
                })
                .await?;
            if i % 2 == 0 {
                group.pleg.do_send(Reinspect::pod(uid.clone()));
            }
            let data = rx.await?;
            anyhow::ensure!(
                data.status
                    .containers
                    .iter()
                    .any(|c| c.id == id && c.state == podvisor_cri::ContainerState::Exited)
            );
            let took = stopped.elapsed();
            if i % 2 == 0 {
                targeted.push(took)
            } else {
                waited.push(took)
            }
            rt.remove_container(&id).await?;
        }
        anyhow::Ok((targeted.summary(), waited.summary()))
    }
    .await;
    let _ = rt.stop_sandbox(&sandbox).await;
    let _ = rt.remove_sandbox(&sandbox).await;
    result
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    System::new().block_on(async move {
        let rt = CriRuntime::new(&args.endpoint, Timeouts::default())?;
        let v = rt.version().await.with_context(|| format!("is containerd running at {}?", args.endpoint))?;
        let log_dir = std::env::temp_dir().join(format!("pleg-bench-{}", std::process::id()));
        std::fs::create_dir_all(&log_dir)?;
        let log_dir = log_dir.to_string_lossy().into_owned();
        println!("# pleg-bench: {} {}\n", v.runtime_name, v.runtime_version);

        println!("## (a) container exit → ContainerDied at the subscriber ({} exits per period)\n", args.exits);
        println!("{}", Summary::HEADER);
        for period in [Duration::from_secs(1), Duration::from_millis(100)] {
            let s = exit_latency(&rt, period, args.exits, &log_dir).await?;
            println!("{}", s.summary().row(&format!("relist every {} ms", period.as_millis())));
        }

        println!("\n## (b) relist cost\n");
        println!("| runtime | pods | relist p50 ms | relist p99 ms | podvisor CPU per relist ms | containerd CPU per relist ms | ingest+compare p50 / p99 µs | compare alone p50 / p99 µs |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        for pods in [10, 100, 110, 500] {
            let (whole, both, diff, cpu) = fake_relists(pods).await?;
            println!(
                "| fake | {pods} | {:.3} | {:.3} | {:.3} | - | {:.1} / {:.1} | {:.1} / {:.1} |",
                whole.p50.as_secs_f64() * 1e3,
                whole.p99.as_secs_f64() * 1e3,
                cpu.as_secs_f64() * 1e3,
                both.p50.as_secs_f64() * 1e6,
                both.p99.as_secs_f64() * 1e6,
                diff.p50.as_secs_f64() * 1e6,
                diff.p99.as_secs_f64() * 1e6
            );
        }
        let (real, cpu, theirs) = real_relists(&rt, args.real_pods, &log_dir).await?;
        println!(
            "| containerd | {} | {:.3} | {:.3} | {:.3} | {} | - | - |",
            args.real_pods,
            real.p50.as_secs_f64() * 1e3,
            real.p99.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            theirs.map_or("?".into(), |d| format!("{:.3}", d.as_secs_f64() * 1e3))
        );

        println!("\n## (c) a stopped container's exit in the cache: targeted re-inspection vs next relist (1 s)\n");
        let (targeted, waited) = freshness(&rt, args.freshness, &log_dir).await?;
        println!("{}", Summary::HEADER);
        println!("{}", targeted.row("Reinspect right after the change"));
        println!("{}", waited.row("wait for the next relist"));
        let _ = std::fs::remove_dir_all(&log_dir);
        System::current().stop();
        anyhow::Ok(())
    })
}
