//! `podvisor run`: the node agent. Finds the runtime, assembles the supervision tree
//! (`tree`) under the root supervisor, serves the debug endpoint and the Kubernetes API
//! (`servers`), and runs until SIGTERM or SIGINT, on which it stops its actors and leaves
//! every pod running, as the kubelet does: the next start adopts them.

mod accounts;
pub mod api;
mod cadvisor;
mod code_pages;
pub mod config;
mod healthz;
mod host;
mod kubelet_server;
mod node;
mod node_metrics;
mod notify;
mod servers;
mod tree;

use std::sync::Arc;

use anyhow::Context as _;
use podvisor_actors::supervisor::{Backoff, Escalation, Intensity};
use podvisor_actors::{Registry, Shutdown, SupervisorConfig, start_root};
use podvisor_cri::{CriRuntime, Runtime};
use podvisor_kubelet::metrics::{KubeletMetrics, Metrics};
use podvisor_streaming::Streams;
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

/// The state directory (the store with every Secret, keys, tokens, kubeconfigs) is the
/// owner's alone (0700), and so are the pods' directories below it (0750, as the
/// kubelet's `pods/`), whatever an older podvisor or the umask made of them: a local
/// user reads no Secret, token or volume of any pod. Containers reach their volumes
/// through their mounts, not through these directories.
fn private_dirs(state: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let pods = state.join("pods");
    std::fs::create_dir_all(&pods).with_context(|| format!("cannot create {}", pods.display()))?;
    for (dir, mode) in [(state, 0o700), (pods.as_path(), 0o750)] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(())
}

/// Threads for blocking file work at once, at most.
const BLOCKING_THREADS: usize = 4;

pub fn run(cfg: AgentConfig) -> anyhow::Result<()> {
    cfg.validate()?;
    host::check_cgroup_version(&cfg, std::path::Path::new("/sys/fs/cgroup"))?;
    for dir in [&cfg.state_dir, &cfg.pod_log_dir, &cfg.manifest_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    private_dirs(&cfg.state_dir)?;
    // Statuses live in the store alone; an older podvisor kept a second copy here.
    let _ = std::fs::remove_dir_all(cfg.state_dir.join("status"));
    let system = actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // File work (pod directories, scans) runs on the blocking pool; a burst of 500
            // pods grew it to over 100 threads, each keeping its stack and its own
            // allocator arena after the burst.
            .max_blocking_threads(BLOCKING_THREADS)
            .build()
            .expect("a tokio runtime")
    });
    system.block_on(serve(cfg))
}

/// The runtime, and its version as the Node reports it (empty while it cannot be reached:
/// the PLEG retries every period and /healthz says what is wrong).
async fn connect(cfg: &mut AgentConfig, metrics: &Metrics) -> anyhow::Result<(CriRuntime, String)> {
    let runtime = CriRuntime::new(&cfg.runtime_endpoint, cfg.runtime.timeouts())?
        .with_mutation_limit(cfg.runtime.max_mutations_in_flight)
        .with_observer(metrics.0.clone());
    let version = match runtime.version().await {
        Ok(v) => {
            info!(runtime = %v.runtime_name, version = %v.runtime_version, endpoint = %cfg.runtime_endpoint, "container runtime found");
            format!("{}://{}", v.runtime_name, v.runtime_version)
        }
        Err(e) => {
            error!(error = %e, "container runtime not reachable yet");
            String::new()
        }
    };
    if cfg.node.cgroup_driver.is_none() {
        cfg.node.cgroup_driver = Some(runtime_cgroup_driver(&runtime).await);
    }
    Ok((runtime, version))
}

/// The runtime's cgroup driver, as the kubelet asks it (CRI RuntimeConfig); cgroupfs, the
/// kubelet's default, where the runtime cannot say or cannot be reached yet.
async fn runtime_cgroup_driver(runtime: &CriRuntime) -> config::CgroupDriver {
    match runtime.client().systemd_cgroups().await {
        Ok(Some(true)) => {
            info!("cgroup driver systemd, as the runtime says");
            config::CgroupDriver::Systemd
        }
        Ok(Some(false)) => {
            info!("cgroup driver cgroupfs, as the runtime says");
            config::CgroupDriver::Cgroupfs
        }
        Ok(None) => {
            info!("the runtime does not say its cgroup driver; cgroupfs");
            config::CgroupDriver::Cgroupfs
        }
        Err(e) => {
            warn!(error = %e, "cannot ask the runtime for its cgroup driver; cgroupfs");
            config::CgroupDriver::Cgroupfs
        }
    }
}

/// The cluster named by `[cluster] kubeconfig`, joined as `node` (bootstrapping the
/// node's credentials first when the kubeconfig is a bootstrap one), as the kubelet joins
/// before it starts anything.
async fn join(
    cfg: &AgentConfig,
    node: &str,
    renew_errors: &prometheus::IntCounter,
) -> anyhow::Result<node::Cluster> {
    let Some(kubeconfig) = &cfg.cluster.kubeconfig else {
        return Ok(None);
    };
    let dir = cfg.state_dir.join("cluster");
    let c = &cfg.cluster;
    let joined = podvisor_cluster::join(kubeconfig, node, &dir, (c.bootstrap_wait, c.lifetime()))
        .await
        .with_context(|| format!("cannot join the cluster of {}", kubeconfig.display()))?;
    info!(node, kubeconfig = %kubeconfig.display(), "joined the cluster");
    // Credentials the node made are the node's to rotate; given ones are their owner's.
    let rotation = joined.own_credentials.then(|| podvisor_cluster::Rotation {
        node: node.to_string(),
        dir,
        rotate_after: c.rotate_after,
        lifetime: c.lifetime(),
        renew_errors: renew_errors.clone(),
    });
    Ok(Some((joined.remote, rotation)))
}

/// The node's name, its metrics, and the cluster it joined.
async fn named_and_joined(
    cfg: &AgentConfig,
    prometheus: &prometheus::Registry,
) -> anyhow::Result<(String, node::Cluster, node_metrics::NodeMetrics)> {
    let node_name = cfg.node_name();
    let credentials = cfg.state_dir.join("cluster");
    let metrics = node_metrics::register(prometheus, &node_name, &credentials)?;
    let cluster = join(cfg, &node_name, &metrics.client_renew_errors).await?;
    Ok((node_name, cluster, metrics))
}

async fn serve(mut cfg: AgentConfig) -> anyhow::Result<()> {
    let prometheus = prometheus::Registry::new();
    let metrics = Metrics(KubeletMetrics::new(&prometheus)?);
    let (runtime, runtime_version) = connect(&mut cfg, &metrics).await?;
    let (node_name, cluster, node_metrics) = named_and_joined(&cfg, &prometheus).await?;
    let remote = cluster.as_ref().map(|(remote, _)| remote.clone());
    let runtime: Arc<dyn Runtime> = Arc::new(runtime);
    let bound = kubelet_server::bind(&cfg)?;
    let standalone = accounts::when_standalone(&cfg, &cluster)?;
    let ground = ground(
        &cfg,
        node_name,
        (runtime.clone(), runtime_version),
        &metrics,
        (cluster, standalone.clone()),
        &bound,
    )?;
    let node_name = ground.node_name.clone();
    let registry = Registry::new();
    let tree = tree::assemble(&cfg, ground, &registry);
    let root = start_root(
        "root",
        supervision(&cfg.supervisor),
        registry.clone(),
        tree.children,
        Escalation::exit_process,
    );
    code_pages::trim_every(code_pages::PERIOD);
    let stats = tree.kubelet.stats.recipient();
    let streams = Arc::new(Streams::new(runtime, cfg.streaming.limits()));
    let api = servers::kubernetes(
        &cfg,
        tree.store.clone(),
        (stats, streams.clone()),
        &standalone,
    )?;
    let wiring = kubelet_server::Wiring {
        cfg: &cfg,
        node: &node_name,
        address: host::address(&cfg),
        cluster: remote,
        streams,
        kubelet: &tree.kubelet,
        metrics: servers::metrics_text(prometheus.clone()),
        probe_metrics: servers::probe_metrics_text(&metrics),
        server_renew_errors: node_metrics.server_renew_errors,
    };
    let kubelet_served = bound
        .map(|b| kubelet_server::serve(b, wiring))
        .transpose()?;
    let endpoint = servers::debug(&cfg, registry, &tree.kubelet, (&metrics, prometheus))?;
    let healthz = healthz::serve_ready(&cfg, &tree.kubelet)?;
    info!(node = %node_name, manifests = %cfg.manifest_dir.display(), endpoint = %format!("http://{}", endpoint.address()), "podvisor running");
    stopping(wait_for_signal().await);
    let _ = root.send(Shutdown).await;
    api.stop().await;
    stop_servers(kubelet_served, endpoint, healthz).await;
    Ok(())
}

fn stopping(signal: &str) {
    info!(signal, "stopping; pods keep running");
    notify::notify("STOPPING=1");
}

/// What the tree is built on.
fn ground(
    cfg: &AgentConfig,
    node_name: String,
    (runtime, runtime_version): (Arc<dyn Runtime>, String),
    metrics: &Metrics,
    (cluster, standalone): (node::Cluster, Option<accounts::Standalone>),
    bound: &Option<podvisor_server::Bound>,
) -> anyhow::Result<tree::Ground> {
    Ok(tree::Ground {
        node_name,
        allocatable: host::allocatable(cfg)?,
        runtime,
        runtime_version,
        metrics: metrics.clone(),
        cluster,
        standalone,
        address: host::address(cfg),
        kubelet_port: bound.as_ref().map_or(0, |b| b.address().port()),
    })
}

async fn stop_servers(
    kubelet: Option<podvisor_streaming::front::Served>,
    endpoint: podvisor_debug::DebugServer,
    healthz: Option<healthz::Healthz>,
) {
    if let Some(h) = healthz {
        h.stop().await;
    }
    if let Some(k) = kubelet {
        k.stop().await;
    }
    endpoint.stop().await;
}
