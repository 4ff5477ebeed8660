//! `podvisor run`: the node agent. Builds the actor tree (`podvisor_kubelet::agent`) under
//! the root supervisor, serves the debug endpoint and the local API, and runs until
//! SIGTERM or SIGINT, on which it stops its actors and leaves every pod running, as the
//! kubelet does: the next start adopts them.

pub mod api;
pub mod config;
mod kube;
mod memory;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context as _;
use podvisor_actors::supervisor::{Backoff, Escalation, Intensity};
use podvisor_actors::{Registry, Shutdown, SupervisorConfig, start_root};
use podvisor_core::quantity;
use podvisor_cri::{CriRuntime, Runtime};
use podvisor_debug::history::{Extra, Extras};
use podvisor_debug::{DebugConfig, DebugServer, Health, MoreMetrics};
use podvisor_kubelet::agent::{AgentParams, build};
use podvisor_kubelet::kuberuntime::config::{NodeConfig, read_dns};
use podvisor_kubelet::metrics::{KubeletMetrics, Metrics};
use podvisor_kubelet::pleg::PlegConfig;
use podvisor_kubelet::pod_workers::Timings;
use podvisor_kubelet::sync_loop::{Allocatable, SyncLoopConfig};
use tracing::{error, info, warn};

pub use config::AgentConfig;

fn supervision(c: &config::Supervisor) -> SupervisorConfig {
    SupervisorConfig {
        backoff: Backoff {
            initial: c.restart_backoff,
            max: c.restart_backoff_max,
            ..Backoff::default()
        },
        intensity: Intensity {
            max_restarts: c.max_restarts,
            within: c.restart_window,
        },
        ..SupervisorConfig::default()
    }
}

fn host_cpu_milli() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as i64 * 1000
}

fn host_memory_bytes() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(i64::MAX, |kb| kb * 1024)
}

fn allocatable(c: &AgentConfig) -> anyhow::Result<Allocatable> {
    Ok(Allocatable {
        pods: c.allocatable.pods,
        cpu_milli: match &c.allocatable.cpu {
            Some(q) => quantity::parse_milli(q)?,
            None => host_cpu_milli(),
        },
        memory_bytes: match &c.allocatable.memory {
            Some(q) => quantity::parse_units(q)?,
            None => host_memory_bytes(),
        },
    })
}

async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            warn!(error = %e, "cannot watch SIGTERM; only SIGINT stops the agent");
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    }
}

/// What the debug page charts beside the mailboxes: relists and pod starts, from the
/// kubelet's histograms.
fn chart_series(m: &Metrics) -> Extras {
    let (relist, start) = (m.relist_duration.clone(), m.pod_start.clone());
    Extras(Arc::new(vec![
        Extra {
            name: "PLEG relist",
            unit: "ms",
            read: Arc::new(move || (relist.get_sample_count(), relist.get_sample_sum() * 1e3)),
        },
        Extra {
            name: "pod start (first seen → running)",
            unit: "s",
            read: Arc::new(move || (start.get_sample_count(), start.get_sample_sum())),
        },
    ]))
}

/// The kubelet's metrics, in the text format its scrapers read, after the actors' own.
fn exposition(registry: prometheus::Registry) -> MoreMetrics {
    MoreMetrics(Arc::new(move |out: &mut String| {
        let families = registry.gather();
        if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&families, out) {
            warn!(error = %e, "the kubelet metrics could not be written");
        }
    }))
}

/// Threads for blocking file work at once, at most.
const BLOCKING_THREADS: usize = 4;

pub fn run(cfg: AgentConfig) -> anyhow::Result<()> {
    cfg.validate()?;
    let node_name = cfg.node_name();
    let alloc = allocatable(&cfg)?;
    for dir in [&cfg.state_dir, &cfg.pod_log_dir, &cfg.manifest_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Statuses live in the store alone; an older podvisor kept a second copy here.
    let _ = std::fs::remove_dir_all(cfg.state_dir.join("status"));
    let system = actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // File work (pod directories, statuses, scans) runs on the blocking pool; a
            // burst of 500 pods grew it to over 100 threads, each keeping its stack and
            // its own allocator arena after the burst.
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .expect("a tokio runtime")
    });
    system.block_on(async move {
        let prometheus = prometheus::Registry::new();
        let metrics = Metrics(KubeletMetrics::new(&prometheus)?);
        let runtime = CriRuntime::new(&cfg.runtime_endpoint, cfg.runtime.timeouts())?
            .with_mutation_limit(cfg.runtime.max_mutations_in_flight)
            .with_observer(metrics.0.clone());
        let runtime_version = match runtime.version().await {
            Ok(v) => {
                info!(runtime = %v.runtime_name, version = %v.runtime_version, endpoint = %cfg.runtime_endpoint, "container runtime found");
                format!("{}://{}", v.runtime_name, v.runtime_version)
            }
            // Keep going: the PLEG retries every period and /healthz says what is wrong.
            Err(e) => {
                error!(error = %e, "container runtime not reachable yet");
                String::new()
            }
        };
        let supervision = supervision(&cfg.supervisor);
        let registry = Registry::new();
        let kube = kube::Kube::build(&cfg, &node_name);
        let agent = build(
            &registry,
            AgentParams {
                runtime: Arc::new(runtime),
                node: NodeConfig {
                    node_name: node_name.clone(),
                    pod_log_dir: cfg.pod_log_dir.clone(),
                    pod_dir: cfg.state_dir.join("pods"),
                    dns: read_dns(std::path::Path::new("/etc/resolv.conf")),
                },
                manifest_dir: cfg.manifest_dir.clone(),
                manifest_rescan_period: cfg.manifest_rescan_period,
                prior_statuses: Some(kube.writer.recipient()),
                pleg: PlegConfig {
                    relist_period: cfg.relist_period,
                    mode: cfg.pleg.mode,
                    max_stream_retries: cfg.pleg.stream_retries,
                    safety_relist_period: cfg.pleg.safety_relist,
                    inspect_timeout: cfg.pleg.inspect_timeout,
                    node: Some(node_name.clone()),
                    metrics: metrics.clone(),
                    ..PlegConfig::default()
                },
                timings: Timings {
                    resync_interval: cfg.resync_interval,
                    backoff: cfg.sync_backoff,
                },
                sync_loop: SyncLoopConfig {
                    allocatable: alloc,
                    housekeeping_period: cfg.housekeeping_period,
                    sources: vec![podvisor_kubelet::manifest_source::SOURCE, podvisor_node::SOURCE],
                    ..SyncLoopConfig::default()
                },
                supervision,
                status_wait: Duration::from_secs(2),
                extra_sources: vec![kube.source.recipient()],
                status_sink: Some(kube.writer.recipient()),
                log_rotation: podvisor_kubelet::log_rotation::LogRotationConfig {
                    max_size: cfg.logs.max_size_bytes(),
                    max_files: cfg.logs.max_files,
                    monitor_interval: cfg.logs.monitor_interval,
                },
                probe_limits: podvisor_probe::Limits {
                    total: cfg.probes.max_in_flight,
                    exec: cfg.probes.max_exec_in_flight,
                },
                metrics: metrics.clone(),
            },
        );
        let agent_stats = agent.stats.recipient();
        let health = Health::new();
        let pleg = agent.pleg_health.clone();
        let liveness = pleg.clone();
        health.liveness("pleg", Arc::new(move || Ok(liveness.check()?)));
        let ready = agent.sources_ready.clone();
        health.readiness(
            "sources",
            Arc::new(move || {
                if ready.load(Ordering::Relaxed) {
                    Ok(())
                } else {
                    Err("the manifest directory has not been read yet".into())
                }
            }),
        );
        let credentials = podvisor_apiserver::tls::load_or_make(&cfg.state_dir.join("pki"))?;
        let token = cfg.debug.token.clone().unwrap_or(credentials.token);
        let api = api::routes(api::ApiState {
            manifest_errors: agent.manifest_source.recipient(),
            stats: agent_stats.clone(),
            token: token.into(),
        });
        let facts = kube::facts(&cfg, &node_name, &alloc, runtime_version);
        let store = kube.store.clone();
        let children = kube.children(
            agent.children,
            (&agent.sync_loop, &agent.status_manager),
            facts,
            pleg,
        );
        let root = start_root("root", supervision, registry.clone(), children, Escalation::exit_process);
        let api_server = kube::serve(&cfg, store, agent_stats)?;
        let server = DebugServer::start_with(
            DebugConfig {
                address: cfg.debug.address,
                token: cfg.debug.token.clone(),
                allow_fault_injection: cfg.debug.fault_injection,
                metrics: Some(exposition(prometheus)),
                extras: chart_series(&metrics),
                ..DebugConfig::default()
            },
            registry,
            health,
            api,
        )?;
        memory::return_freed_memory();
        info!(node = %node_name, manifests = %cfg.manifest_dir.display(), endpoint = %format!("http://{}", server.address()), "podvisor running");
        let signal = wait_for_signal().await;
        info!(signal, "stopping; pods keep running");
        let _ = root.send(Shutdown).await;
        api_server.stop().await;
        server.stop().await;
        anyhow::Ok(())
    })
}
