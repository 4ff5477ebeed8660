//! podvisor beside the real kubelet, as nodes of one real cluster (`scripts/cluster-up`'s
//! kube-apiserver, controller manager and scheduler), one node at a time against the same
//! containerd, with the same pods bound to each (`spec.nodeName`): what people compare.
//!
//! For each node: its idle CPU and memory; create → Running and Ready seen through a watch
//! on the apiserver, one pod at a time and `--batch` at once; `kubectl exec` and `kubectl
//! logs` round trips through the API server (and CRI ExecSync, the floor); graceful delete → gone;
//! container exit (the runtime's `finishedAt`, CRI, nanoseconds) → the exit seen through
//! the watch; CPU and memory with `--batch` pods running; and what differs between the two
//! nodes' statuses for the same pod spec. Beside them, the raw CRI floor of one pod's start
//! (the same calls, made directly, one before each of the node's starts, so both see the
//! same machine), and each batch's schedule as the runtime saw it
//! (sandboxes begun, containers created and started, pods Running, over time), and the CPU
//! the runtime, the control plane and the node used while the batch started, and the API
//! requests served meanwhile. A burst has two floors: the runtime alone, and the runtime
//! with the cluster's least share of it (each pod created, its status patched once,
//! seen through a watch), no node.
//!
//! scripts/cluster-up && PODVISOR_CONTAINERD_VERSION=1.7 scripts/containerd-up
//! (. scripts/lib/kubernetes-build.sh && k8s_build v1.37.2 kubelet)   # the kubelet, once
//! cargo build --release -p podvisor --bin podvisor && cargo build --release -p podvisor-bench --bin node-bench
//! target/release/node-bench --endpoint unix:///var/lib/podvisor-containerd-1.7/containerd.sock

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use clap::Parser;
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::jiff::Timestamp;
use podvisor_bench::api_requests;
use podvisor_bench::floor;
use podvisor_bench::hops;
use podvisor_bench::nodes::{NodeArgs, NodeKind, NodeProc, NodeSetup, node_ready};
use podvisor_bench::procstat;
use podvisor_bench::schedule::{self, PodTimes};
use podvisor_bench::stats::{Samples, Summary, ms};
use podvisor_client::{Api, Client, DeleteParams, ListParams, Patch, PostParams, WatchEvent};
use podvisor_cri::{CriClient, CriRuntime, Runtime, Timeouts};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    runtime: podvisor_bench::args::RuntimeArg,
    #[command(flatten)]
    agent: podvisor_bench::args::AgentArg,
    #[command(flatten)]
    nodes: NodeArgs,
    #[arg(long, default_value_t = 20)]
    singles: usize,
    #[arg(long, default_value_t = 100)]
    batch: usize,
    #[arg(long, default_value_t = 20)]
    exits: usize,
    /// kubectl exec and kubectl logs round trips through the API server.
    #[arg(long, default_value_t = 20)]
    streams: usize,
    /// Seconds over which idle CPU is measured.
    #[arg(long, default_value_t = 10)]
    window: u64,
    /// Also where podvisor's one-pod starts go, hop by hop, from its own log (JSON, at the
    /// levels the hops need and warnings: it then logs less than by default).
    #[arg(long)]
    hops: bool,
}

const IMAGE: &str = "localhost/podvisor/busybox:test";
const SLEEPER: &str = "trap 'exit 0' TERM; sleep 86400 & wait";

/// When each pod was first seen Running and Ready, and when its first container was
/// first seen terminated (wall clock, for the runtime's `finishedAt`).
#[derive(Default)]
struct Seen {
    ready: HashMap<String, Instant>,
    exited: HashMap<String, (SystemTime, String)>,
    gone: HashMap<String, Instant>,
    last: HashMap<String, Arc<Pod>>,
}

fn observe(seen: &Mutex<Seen>, e: WatchEvent<Arc<Pod>>) {
    let mut s = seen.lock().unwrap();
    let p = match e {
        WatchEvent::Added(p) | WatchEvent::Modified(p) => p,
        WatchEvent::Deleted(p) => {
            let name = p.metadata.name.clone().unwrap_or_default();
            s.gone.entry(name).or_insert_with(Instant::now);
            return;
        }
        WatchEvent::Bookmark(_) => return,
    };
    let name = p.metadata.name.clone().unwrap_or_default();
    let status = p.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if ready && status.phase.as_deref() == Some("Running") {
        s.ready.entry(name.clone()).or_insert_with(Instant::now);
    }
    // The first exit: the state, or the last state once the container is restarting.
    let first = status.container_statuses.iter().flatten().next();
    let terminated = first.and_then(|c| {
        let now = c.state.as_ref().and_then(|s| s.terminated.as_ref());
        let last = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        now.or(last)
            .map(|t| t.container_id.clone().or(c.container_id.clone()))
    });
    if let Some(id) = terminated {
        let id = id.unwrap_or_default();
        s.exited
            .entry(name.clone())
            .or_insert((SystemTime::now(), id));
    }
    s.last.insert(name, p);
}

/// What a list says when a watch begins again: its pods as if modified, and the pods
/// seen before and no longer listed as deleted now.
fn relisted(seen: &Mutex<Seen>, items: Vec<Arc<Pod>>) {
    let names: std::collections::HashSet<String> = items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let gone: Vec<String> = {
        let s = seen.lock().unwrap();
        s.last
            .keys()
            .filter(|n| !names.contains(*n))
            .cloned()
            .collect()
    };
    for name in gone {
        let mut s = seen.lock().unwrap();
        s.last.remove(&name);
        s.gone.entry(name).or_insert_with(Instant::now);
    }
    for p in items {
        observe(seen, WatchEvent::Modified(p));
    }
}

/// Follows the namespace's pods until dropped.
#[must_use = "the watch stops when this is dropped"]
struct Watching(tokio::task::JoinHandle<()>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Follows the namespace's pods. A watch that ends (the API server's timeout, or an
/// error such as a version compacted away) is begun again 100 ms later from a fresh list:
/// once begun again at once from the same version, a version compacted away made this
/// loop ask the API server hundreds of times a second for minutes, in whichever node's
/// run came later (the kubelet's).
async fn watch(api: Api<Pod>, seen: Arc<Mutex<Seen>>) -> anyhow::Result<Watching> {
    let list = api.list(&ListParams::default()).await?;
    let mut version = list.resource_version.clone();
    Ok(Watching(tokio::spawn(async move {
        loop {
            match api.watch(&ListParams::default(), &version).await {
                Ok(mut stream) => loop {
                    match stream.next().await {
                        Some(Ok(e)) => {
                            let object =
                                e.object().and_then(|p| p.metadata.resource_version.clone());
                            if let Some(v) = object {
                                version = v;
                            }
                            observe(&seen, e);
                        }
                        Some(Err(e)) => {
                            eprintln!("node-bench: a watch ended ({e}); begun again");
                            break;
                        }
                        None => break,
                    }
                },
                Err(e) => eprintln!("node-bench: a watch not begun ({e}); once more"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            if let Ok(list) = api.list(&ListParams::default()).await {
                version = list.resource_version.clone();
                relisted(&seen, list.items);
            }
        }
    })))
}

fn pod(name: &str, node: &str, command: &str, restart: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "automountServiceAccountToken": false,
                 "restartPolicy": restart, "terminationGracePeriodSeconds": 30,
                 "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "Never",
                                 "command": ["sh", "-c", command]}]}
    }))
    .expect("a pod")
}

async fn until<T>(
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

struct Results {
    single: Samples,
    /// The raw CRI floor, one start just before each of `single`'s: whole, and its
    /// RunPodSandbox and CreateContainer + StartContainer.
    floor: Samples,
    floor_parts: (Samples, Samples),
    /// Floor starts made again (the node killed the pod half way).
    floor_retries: usize,
    delete: Samples,
    batch: Samples,
    batch_all: Duration,
    /// The batch's pods as the runtime ran them.
    schedule: Vec<PodTimes>,
    /// CPU time each kind of process used from the batch's creates until all ran.
    batch_cpu: BTreeMap<&'static str, Duration>,
    /// The API requests served meanwhile (every client's), by kind.
    batch_requests: Vec<(String, u64)>,
    exit: Samples,
    /// Exited containers the runtime no longer had when asked.
    exits_lost: usize,
    /// CPU %, RSS MiB and its anonymous part, means over the window (the rest is mostly the
    /// binary's own pages).
    idle: (f64, f64, f64),
    busy: (f64, f64, f64),
    status: Option<Arc<Pod>>,
    /// `kubectl exec -- true` and `kubectl logs` through the API server; CRI ExecSync.
    exec: Samples,
    logs: Samples,
    exec_sync: Samples,
    /// Each one-pod start's create and when it was seen Running and ready (wall clock,
    /// as the node's log stamps it); with `--hops`, each hop of podvisor's.
    created: HashMap<String, Timestamp>,
    seen_ready: HashMap<String, Timestamp>,
    hops: Vec<Samples>,
    own: Samples,
}

/// CPU (% of one core) of `pid` over `window`, and its RSS and anonymous RSS (MiB), each
/// the mean of a reading every second of it: podvisor unmaps the code it has not run every
/// 10 s, so one reading of its file-backed pages depends on how long ago that was.
async fn usage(pid: u32, window: Duration) -> anyhow::Result<(f64, f64, f64)> {
    let c0 = procstat::cpu_time(pid)?;
    let t0 = Instant::now();
    let (mut rss, mut anon, mut n) = (0u64, 0u64, 0u64);
    while n == 0 || t0.elapsed() < window {
        tokio::time::sleep(Duration::from_secs(1).min(window)).await;
        rss += procstat::rss_bytes(pid)?;
        anon += procstat::anon_rss_bytes(pid)?;
        n += 1;
    }
    let cpu = (procstat::cpu_time(pid)? - c0).as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0;
    let mib = |b: u64| b as f64 / n as f64 / (1 << 20) as f64;
    Ok((cpu, mib(rss), mib(anon)))
}

async fn singles(
    pods: &Api<Pod>,
    seen: &Mutex<Seen>,
    (node, ns): (&str, &str),
    (cri, n): (&CriClient, usize),
    r: &mut Results,
) -> anyhow::Result<()> {
    for i in 0..n {
        // Each start on a quiet runtime, as the floor's: a node reports a pod gone before
        // its runtime has stopped the sandbox (its network torn down), which would run
        // beside the next start. Removing it is left to each node (the kubelet's GC does it
        // a minute later).
        if i > 0 {
            quiet(cri, ns).await?;
        }
        // What a teardown leaves the runtime doing (a node's removal after the stop, the
        // runtime's own cleanup) settles before either start: neither pays for the other.
        tokio::time::sleep(SETTLE).await;
        let floor_pod = format!("node-bench-floor-{node}-{i}");
        let start = floor_one(cri, &floor_pod, &mut r.floor_retries).await?;
        r.floor.push(start.total());
        r.floor_parts.0.push(start.sandbox);
        r.floor_parts.1.push(start.container);
        tokio::time::sleep(SETTLE).await;
        let name = format!("s-{i}");
        let (t0, wall) = (Instant::now(), SystemTime::now());
        pods.create(&PostParams::default(), pod(&name, node, SLEEPER, "Always"))
            .await?;
        let at = until("a pod Running", Duration::from_secs(60), || {
            seen.lock().unwrap().ready.get(&name).copied()
        })
        .await?;
        r.single.push(at - t0);
        r.created.insert(name.clone(), hops::wall_at(wall));
        r.seen_ready
            .insert(name.clone(), hops::wall_at(wall + (at - t0)));
        if i == 0 {
            r.status = seen.lock().unwrap().last.get(&name).cloned();
        }
        let t1 = Instant::now();
        pods.delete(&name, &DeleteParams::default()).await?;
        let gone = until("a pod gone", Duration::from_secs(60), || {
            seen.lock().unwrap().gone.get(&name).copied()
        })
        .await?;
        r.delete.push(gone - t1);
    }
    Ok(())
}

/// How long the runtime is left to settle before each start of one at a time.
const SETTLE: Duration = Duration::from_millis(500);

/// Until the runtime holds no ready sandbox of namespace `ns` (within 60 s).
async fn quiet(cri: &CriClient, ns: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let selector = std::collections::BTreeMap::from([(
        podvisor_cri::labels::POD_NAMESPACE.to_string(),
        ns.to_string(),
    )]);
    let filter = podvisor_cri::proto::PodSandboxFilter {
        label_selector: selector,
        state: Some(podvisor_cri::proto::PodSandboxStateValue {
            state: podvisor_cri::proto::PodSandboxState::SandboxReady as i32,
        }),
        ..Default::default()
    };
    while !cri.list_pod_sandbox(Some(filter.clone())).await?.is_empty() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the runtime kept a sandbox of {ns} ready"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// What a process is, for the batch's CPU: the runtime or the control plane.
fn kind_of(comm: &str) -> Option<&'static str> {
    Some(match comm {
        "containerd" => "containerd",
        c if c.starts_with("containerd-shim") || c == "runc" => "shims and runc",
        "kube-apiserver" => "kube-apiserver",
        "etcd" => "etcd",
        "kube-controller" | "kube-scheduler" => "controller manager, scheduler",
        _ => return None, // the node agent is counted by its pid
    })
}

/// How long a batch of `n` may take to be Running: the kubelet needs over 300 s for 500.
fn batch_limit(n: usize) -> Duration {
    Duration::from_secs(300.max(2 * n as u64))
}

async fn batch(
    pods: &Api<Pod>,
    seen: &Mutex<Seen>,
    (node, ns, agent): (&str, &str, u32),
    (cri, n, admin): (&CriClient, usize, &std::path::Path),
    r: &mut Results,
) -> anyhow::Result<()> {
    let requests0 = api_requests::read(admin)?;
    let cpu0 = procstat::cpu_by_kind(kind_of)?;
    let agent0 = procstat::cpu_time(agent)?;
    let (t0, wall) = (Instant::now(), SystemTime::now());
    futures_util::stream::iter((0..n).map(|i| {
        let p = pod(&format!("b-{i}"), node, SLEEPER, "Always");
        async move { pods.create(&PostParams::default(), p).await.map(|_| ()) }
    }))
    .buffer_unordered(16)
    .try_collect::<Vec<()>>()
    .await?;
    let names: Vec<String> = (0..n).map(|i| format!("b-{i}")).collect();
    until("the batch Running", batch_limit(n), || {
        let s = seen.lock().unwrap();
        names.iter().all(|n| s.ready.contains_key(n)).then_some(())
    })
    .await?;
    r.batch_cpu = cpu_since(&cpu0)?;
    r.batch_requests = api_requests::served(&requests0, &api_requests::read(admin)?);
    let agent_cpu = procstat::cpu_time(agent)?.saturating_sub(agent0);
    r.batch_cpu.insert("node agent", agent_cpu);
    let mut running = HashMap::new();
    for n in &names {
        let d = seen.lock().unwrap().ready[n] - t0;
        r.batch.push(d);
        r.batch_all = r.batch_all.max(d);
        running.insert(n.clone(), d);
    }
    r.schedule = schedule::of_namespace(cri, ns, wall, &running).await?;
    Ok(())
}

async fn exits(
    pods: &Api<Pod>,
    seen: &Mutex<Seen>,
    rt: &CriRuntime,
    node: &str,
    n: usize,
    r: &mut Results,
) -> anyhow::Result<()> {
    for i in 0..n {
        // Restarted after the exit (and a 10 s back-off), so the exited container stays
        // in the runtime to be asked for its finishedAt.
        let p = pod(
            &format!("x-{i}"),
            node,
            &format!("sleep {}", 2 + i % 3),
            "Always",
        );
        pods.create(&PostParams::default(), p).await?;
    }
    let names: Vec<String> = (0..n).map(|i| format!("x-{i}")).collect();
    // Each exit's container asked for its finishedAt as soon as the exit is seen: the
    // runtime keeps it only until the restart after it.
    let mut asked = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while asked.len() < n {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for the exits");
        let fresh: Vec<(String, SystemTime, String)> = {
            let s = seen.lock().unwrap();
            let new = names.iter().filter(|n| !asked.contains(*n));
            new.filter_map(|n| s.exited.get(n).map(|(at, id)| (n.clone(), *at, id.clone())))
                .collect()
        };
        for (name, at, id) in fresh {
            asked.insert(name);
            let id = id.trim_start_matches("containerd://");
            let Ok(status) = rt.container_status(id).await else {
                r.exits_lost += 1;
                continue;
            };
            let seen_ns = at.duration_since(SystemTime::UNIX_EPOCH)?.as_nanos() as i64;
            let late = u64::try_from(seen_ns - status.finished_at).unwrap_or(0);
            r.exit.push(Duration::from_nanos(late));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // Gone before the batch, which may take every pod slot the node has.
    for name in &names {
        pods.delete(name, &DeleteParams::default()).await?;
    }
    until("the exited pods gone", Duration::from_secs(120), || {
        let s = seen.lock().unwrap();
        names.iter().all(|n| s.gone.contains_key(n)).then_some(())
    })
    .await?;
    Ok(())
}

/// The namespace's pods deleted and gone (the node stops them first).
async fn drain(client: &Client, ns: &str, n: usize) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(ns, &DeleteParams::default()).await?;
    let limit = batch_limit(n);
    let deadline = Instant::now() + limit;
    while namespaces.get_opt(ns).await?.is_some() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "namespace {ns} not gone after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

/// One node's measurements; a failed one still removes its namespace and Node (one left
/// NotReady would disturb the cluster's zone for later runs and tests).
async fn run_node(
    kind: NodeKind,
    setup: &NodeSetup,
    client: &Client,
    rt: &(CriRuntime, CriClient),
    args: &Args,
) -> anyhow::Result<Results> {
    let node = NodeProc::start(kind, setup)?;
    let name = node.name.clone();
    let r = measure(node, client, rt, args).await;
    if r.is_err() {
        let _ = Api::<Namespace>::all(client.clone())
            .delete(&name, &DeleteParams::default())
            .await;
        let _ = Api::<Node>::all(client.clone())
            .delete(&name, &DeleteParams::default())
            .await;
    }
    r
}

async fn measure(
    node: NodeProc,
    client: &Client,
    (rt, cri): &(CriRuntime, CriClient),
    args: &Args,
) -> anyhow::Result<Results> {
    node_ready(client, &node.name).await?;
    let ns = node.name.clone();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.clone());
    namespaces.create(&PostParams::default(), n).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let _watching = watch(pods.clone(), seen.clone()).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let window = Duration::from_secs(args.window);
    let mut r = Results {
        single: Samples::new(),
        floor: Samples::new(),
        floor_parts: (Samples::new(), Samples::new()),
        floor_retries: 0,
        delete: Samples::new(),
        batch: Samples::new(),
        batch_all: Duration::ZERO,
        schedule: Vec::new(),
        batch_cpu: BTreeMap::new(),
        batch_requests: Vec::new(),
        exit: Samples::new(),
        exits_lost: 0,
        idle: usage(node.pid(), window).await?,
        busy: (0.0, 0.0, 0.0),
        status: None,
        exec: Samples::new(),
        logs: Samples::new(),
        exec_sync: Samples::new(),
        created: HashMap::new(),
        seen_ready: HashMap::new(),
        hops: Vec::new(),
        own: Samples::new(),
    };
    singles(&pods, &seen, (&node.name, &ns), (cri, args.singles), &mut r).await?;
    let admin = args.nodes.admin_kubeconfig();
    let places = (node.name.as_str(), ns.as_str());
    streams(&pods, &seen, places, (rt, &admin), args.streams, &mut r).await?;
    exits(&pods, &seen, rt, &node.name, args.exits, &mut r).await?;
    let batch_places = (node.name.as_str(), ns.as_str(), node.pid());
    let batch_runtime = (cri, args.batch, admin.as_path());
    batch(&pods, &seen, batch_places, batch_runtime, &mut r).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    r.busy = usage(node.pid(), window).await?;
    drain(client, &ns, args.batch).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let (name, kind, log) = (node.name.clone(), node.kind, node.dir.join("node.log"));
    node.stop();
    let _ = nodes.delete(&name, &DeleteParams::default()).await;
    if args.hops && kind == NodeKind::Podvisor {
        r.hops = hops::cluster_hops(&log, &r.created, &r.seen_ready)?;
        r.own = hops::own_time(&log, &r.created)?;
    }
    Ok(r)
}

/// `kubectl exec … -- true` and `kubectl logs` through the API server to a pod on the
/// node, one at a time, and the runtime's own floor for running a command (CRI ExecSync).
async fn streams(
    pods: &Api<Pod>,
    seen: &Mutex<Seen>,
    (node, ns): (&str, &str),
    (rt, kubeconfig): (&CriRuntime, &std::path::Path),
    n: usize,
    r: &mut Results,
) -> anyhow::Result<()> {
    pods.create(
        &PostParams::default(),
        pod("streamer", node, SLEEPER, "Always"),
    )
    .await?;
    until("streamer ready", Duration::from_secs(120), || {
        seen.lock().unwrap().ready.get("streamer").copied()
    })
    .await?;
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let timed = |args: &[&str]| -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        let out = std::process::Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["-n", ns])
            .args(args)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(t0.elapsed())
    };
    for _ in 0..n {
        r.exec.push(timed(&["exec", "streamer", "--", "true"])?);
        r.logs.push(timed(&["logs", "streamer"])?);
    }
    let status = seen.lock().unwrap().last.get("streamer").cloned();
    let id = status
        .and_then(|p| {
            p.status
                .clone()?
                .container_statuses?
                .first()?
                .container_id
                .clone()
        })
        .and_then(|id| id.split("://").nth(1).map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("no container id for streamer"))?;
    for _ in 0..n {
        let t0 = Instant::now();
        rt.exec_sync(&id, &["true".to_string()], Duration::from_secs(10))
            .await?;
        r.exec_sync.push(t0.elapsed());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut setup = args.nodes.setup(&args.agent, &args.runtime)?;
    setup.hops_log = args.hops;
    let client = args.nodes.admin().await?;
    let rt = CriRuntime::new(&args.runtime.endpoint, Timeouts::default())?;
    let cri = CriClient::new(&args.runtime.endpoint, Timeouts::default())?;
    let v = rt.version().await?;
    println!(
        "# node-bench: {} {}, kubelet {}\n",
        v.runtime_name,
        v.runtime_version,
        args.nodes.kubelet.display()
    );
    let api_floor = api_floor(&client, args.singles).await?;
    let floors = [
        floor_batch(&cri, args.batch).await?,
        floor_batch_api(&client, &cri, args.batch, &args.nodes.admin_kubeconfig()).await?,
    ];
    let both = (rt, cri);
    let mut all = Vec::new();
    for kind in [NodeKind::Podvisor, NodeKind::Kubelet] {
        match run_node(kind, &setup, &client, &both, &args).await {
            Ok(r) => {
                eprintln!("node-bench: {} done: {}", kind.label(), headline(&r));
                all.push((kind, r));
            }
            Err(e) => {
                // The nodes measured before still count: print them, then fail.
                report(&args, (&api_floor, &floors), &all);
                return Err(e.context(format!("{} not measured", kind.label())));
            }
        }
    }
    report(&args, (&api_floor, &floors), &all);
    Ok(())
}

/// The cluster's own part of the same path, with no node: a pod created, its status set
/// Running and Ready by a status patch (what a node's write does), and seen so through
/// the watch; `n` times one at a time.
async fn api_floor(client: &Client, n: usize) -> anyhow::Result<Samples> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let _watching = watch(pods.clone(), seen.clone()).await?;
    let ready = serde_json::json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    let mut out = Samples::new();
    for i in 0..n {
        let name = format!("node-bench-api-floor-{i}");
        let t0 = Instant::now();
        let body = pod(&name, "node-bench-no-node", SLEEPER, "Always");
        pods.create(&PostParams::default(), body).await?;
        let patch = Patch::Merge(ready.clone());
        pods.patch_status(&name, &PostParams::default(), &patch)
            .await?;
        let at = until("the API floor's pod Ready", Duration::from_secs(30), || {
            seen.lock().unwrap().ready.get(&name).copied()
        })
        .await?;
        out.push(at - t0);
        let now = DeleteParams {
            grace_seconds: Some(0),
            ..DeleteParams::default()
        };
        pods.delete(&name, &now).await?;
    }
    Ok(out)
}

/// A burst's floor: until its last pod ran, and the CPU each kind of process used and the
/// API requests served meanwhile.
struct BurstFloor {
    what: &'static str,
    took: Duration,
    cpu: BTreeMap<&'static str, Duration>,
    requests: Vec<(String, u64)>,
}

fn floor_logs() -> anyhow::Result<String> {
    let logs = std::env::temp_dir().join("node-bench-floor");
    std::fs::create_dir_all(&logs)?;
    Ok(logs.to_string_lossy().into_owned())
}

/// CPU each kind of process used since `cpu0`.
fn cpu_since(
    cpu0: &BTreeMap<&'static str, Duration>,
) -> anyhow::Result<BTreeMap<&'static str, Duration>> {
    Ok(procstat::cpu_by_kind(kind_of)?
        .into_iter()
        .map(|(kind, cpu)| {
            let before = cpu0.get(kind).copied().unwrap_or_default();
            (kind, cpu.saturating_sub(before))
        })
        .collect())
}

/// The raw CRI floor of a burst: `n` pods started with the agent's default bound on calls
/// in flight, then torn down; until the last one ran.
async fn floor_batch(cri: &CriClient, n: usize) -> anyhow::Result<BurstFloor> {
    let logs = floor_logs()?;
    let bound = podvisor_cri::client::default_mutations();
    let prefix = "node-bench-burst";
    floor::remove_leftovers(cri, prefix).await?;
    let cpu0 = procstat::cpu_by_kind(kind_of)?;
    let started = floor::start_pods_parallel(cri, prefix, n, bound, false, &logs).await;
    let (pods, took) = match started {
        Ok(started) => started,
        Err(e) => {
            floor::remove_leftovers(cri, prefix).await?;
            return Err(e);
        }
    };
    let cpu = cpu_since(&cpu0)?;
    floor::teardown_parallel(cri, &pods, bound).await?;
    Ok(BurstFloor {
        what: "the runtime alone",
        took,
        cpu,
        requests: Vec::new(),
    })
}

/// The floor of a burst with the cluster's share of it and no node: `n` pods created at
/// once (16 requests at a time, as the batch's) bound to a node that does not exist; each,
/// once created, started raw (the agent's default bound on calls in flight), then its
/// status patched Running and Ready (the one write a node must make); until the watch saw
/// the last so. What no node can do better than here.
async fn floor_batch_api(
    client: &Client,
    cri: &CriClient,
    n: usize,
    admin: &std::path::Path,
) -> anyhow::Result<BurstFloor> {
    let prefix = "node-bench-burst-api";
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
    let measured = burst_with_api(&pods, cri, &names, admin).await;
    // Whatever happened, none of it stays.
    floor::remove_leftovers(cri, prefix).await?;
    let now = DeleteParams {
        grace_seconds: Some(0),
        ..DeleteParams::default()
    };
    let deletes = futures_util::stream::iter(names.iter().map(|name| pods.delete(name, &now)));
    let _: Vec<_> = deletes.buffer_unordered(16).collect().await;
    let (took, cpu, requests) = measured?;
    Ok(BurstFloor {
        what: "the runtime and the API's share",
        took,
        cpu,
        requests,
    })
}

type Measured = (
    Duration,
    BTreeMap<&'static str, Duration>,
    Vec<(String, u64)>,
);

/// [`floor_batch_api`]'s burst, its runtime pods torn down after.
async fn burst_with_api(
    pods: &Api<Pod>,
    cri: &CriClient,
    names: &[String],
    admin: &std::path::Path,
) -> anyhow::Result<Measured> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let _watching = watch(pods.clone(), seen.clone()).await?;
    let created = Mutex::new(std::collections::HashSet::new());
    let patches = Mutex::new(Vec::new());
    let (logs, bound) = (floor_logs()?, podvisor_cri::client::default_mutations());
    let (requests0, cpu0) = (api_requests::read(admin)?, procstat::cpu_by_kind(kind_of)?);
    let t0 = Instant::now();
    let creates = futures_util::stream::iter(names.iter().map(|name| {
        let created = &created;
        async move {
            let body = pod(name, "node-bench-no-node", SLEEPER, "Always");
            pods.create(&PostParams::default(), body).await?;
            created.lock().unwrap().insert(name.clone());
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(16)
    .try_collect::<Vec<()>>();
    let starts = floor::start_parallel(cri, names.len(), bound, |i| {
        let (name, created, logs, patches) = (&names[i], &created, &logs, &patches);
        async move {
            let limit = Duration::from_secs(60);
            until("the pod created", limit, || {
                created.lock().unwrap().contains(name).then_some(())
            })
            .await?;
            let started = floor::start_pod(cri, name, false, logs).await?;
            let ready = serde_json::json!({"status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}});
            let (pods, name) = (pods.clone(), name.clone());
            patches.lock().unwrap().push(tokio::spawn(async move {
                let patch = Patch::Merge(ready);
                pods.patch_status(&name, &PostParams::default(), &patch)
                    .await
            }));
            Ok(started)
        }
    });
    let (created_all, started) = tokio::join!(creates, starts);
    created_all?;
    let (raw, _) = started?;
    for patch in patches.into_inner().unwrap() {
        patch.await??;
    }
    until("the burst's pods Ready", batch_limit(names.len()), || {
        let s = seen.lock().unwrap();
        names.iter().all(|n| s.ready.contains_key(n)).then_some(())
    })
    .await?;
    let took = t0.elapsed();
    let cpu = cpu_since(&cpu0)?;
    let requests = api_requests::served(&requests0, &api_requests::read(admin)?);
    floor::teardown_parallel(cri, &raw, bound).await?;
    Ok((took, cpu, requests))
}

/// The raw CRI floor of one pod's start (RunPodSandbox, CreateContainer, StartContainer
/// of a one-container bridge pod, made directly), torn down before it returns. The
/// kubelet kills every runtime pod it does not know (its housekeeping, every 2 s), so a
/// start beside it may lose its sandbox half way: such a start is made again, up to
/// three times, and the retries are counted.
async fn floor_one(
    cri: &CriClient,
    uid: &str,
    retries: &mut usize,
) -> anyhow::Result<floor::PodStart> {
    let logs = std::env::temp_dir().join("node-bench-floor");
    std::fs::create_dir_all(&logs)?;
    let logs = logs.to_string_lossy().into_owned();
    let mut attempt = 0;
    loop {
        let name = format!("{uid}-{attempt}");
        match floor::start_pod(cri, &name, false, &logs).await {
            Ok((pod, took)) => {
                // The start was measured whole; the kubelet may be tearing the pod down
                // meanwhile (its network then gone under our stop): what is left goes.
                if let Err(e) = floor::teardown_pod(cri, &pod).await {
                    eprintln!("node-bench: a floor pod's teardown failed ({e:#}); removing it");
                    remove_floor_pod(cri, &name).await;
                }
                return Ok(took);
            }
            Err(e) if attempt < 3 => {
                eprintln!("node-bench: a floor start failed ({e:#}); once more");
                *retries += 1;
                attempt += 1;
                remove_floor_pod(cri, &name).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Removes whatever a failed floor start of pod `uid` left.
async fn remove_floor_pod(cri: &CriClient, uid: &str) {
    let Ok(sandboxes) = cri.list_pod_sandbox(None).await else {
        return;
    };
    for s in sandboxes {
        if s.metadata.as_ref().is_some_and(|m| m.uid == uid) {
            let _ = cri.stop_pod_sandbox(&s.id).await;
            let _ = cri.remove_pod_sandbox(&s.id).await;
        }
    }
}

fn report(
    args: &Args,
    (api_floor, floors): (&Samples, &[BurstFloor]),
    all: &[(NodeKind, Results)],
) {
    let table = |title: &str, f: &dyn Fn(&Results) -> Summary| {
        println!("## {title}\n\n{}", Summary::HEADER);
        for (k, r) in all {
            println!("{}", f(r).row(k.label()));
        }
        println!();
    };
    println!(
        "## create → Running and Ready (watch), one at a time ×{}\n\n{}",
        args.singles,
        Summary::HEADER
    );
    for (k, r) in all {
        println!("{}", r.single.summary().row(k.label()));
        let beside = format!("raw CRI floor, just before each of {}'s", k.label());
        println!("{}", r.floor.summary().row(&beside));
    }
    println!(
        "{}\n",
        api_floor
            .summary()
            .row("API floor: create, status patch, watch")
    );
    for (k, r) in all {
        println!(
            "{}: p50 {:+.1} ms over the raw floor beside it and the API floor ({} floor starts made again: the node killed them)\n",
            k.label(),
            over_floors(r, api_floor),
            r.floor_retries
        );
    }
    for (k, r) in all.iter().filter(|(_, r)| !r.hops.is_empty()) {
        println!(
            "### {}: where one pod's start goes, from its log\n\n{}",
            k.label(),
            Summary::HEADER
        );
        for (name, s) in hops::CLUSTER_HOPS.iter().zip(&r.hops) {
            println!("{}", s.summary().row(name));
        }
        println!(
            "{}\n{}\n{}\n",
            r.own
                .summary()
                .row("its own time: added → reported ready, less its CRI calls"),
            r.floor_parts.0.summary().row("floor: RunPodSandbox"),
            r.floor_parts
                .1
                .summary()
                .row("floor: CreateContainer + StartContainer")
        );
    }
    table(
        &format!(
            "{} created at once: each pod's create → Running and Ready",
            args.batch
        ),
        &|r| r.batch.summary(),
    );
    for (k, r) in all {
        print_schedule(k.label(), r);
    }
    table("graceful delete → gone (watch), one at a time", &|r| {
        r.delete.summary()
    });
    table(
        &format!(
            "container exit (CRI finishedAt) → seen through the watch, ×{}",
            args.exits
        ),
        &|r| r.exit.summary(),
    );
    table(
        &format!(
            "`kubectl exec pod -- true` through the API server, ×{}",
            args.streams
        ),
        &|r| r.exec.summary(),
    );
    table(
        &format!(
            "`kubectl logs pod` through the API server, ×{}",
            args.streams
        ),
        &|r| r.logs.summary(),
    );
    table(
        &format!(
            "the runtime's floor: CRI ExecSync `true` in the same container, ×{}",
            args.streams
        ),
        &|r| r.exec_sync.summary(),
    );
    for (k, r) in all.iter().filter(|(_, r)| r.exits_lost > 0) {
        println!(
            "{}: {} exited containers were gone from the runtime when asked\n",
            k.label(),
            r.exits_lost
        );
    }
    println!(
        "## the node agent's resources\n\n| node | idle CPU % | idle RSS (anonymous) MiB, mean | CPU % with {n} pods | RSS (anonymous) MiB with {n} pods, mean | {n} at once: until the last |\n|---|---:|---:|---:|---:|---:|",
        n = args.batch
    );
    for (k, r) in all {
        println!(
            "| {} | {:.2} | {:.1} ({:.1}) | {:.2} | {:.1} ({:.1}) | {:.0} ms |",
            k.label(),
            r.idle.0,
            r.idle.1,
            r.idle.2,
            r.busy.0,
            r.busy.1,
            r.busy.2,
            r.batch_all.as_secs_f64() * 1000.0
        );
    }
    println!();
    print_batch_cpu(args.batch, floors, all);
    print_requests(args.batch, floors, all);
    let statuses: Vec<_> = all.iter().map(|(_, r)| r.status.clone()).collect();
    if let [Some(a), Some(b)] = statuses.as_slice() {
        podvisor_bench::status_diff::print(a, b);
    }
}

/// One node's main figures, printed as soon as it is measured.
/// How far a node's one-pod p50 is above the raw CRI floor's beside it plus the API's.
fn over_floors(r: &Results, api_floor: &Samples) -> f64 {
    let p50 = |s: &Samples| s.summary().p50.as_secs_f64() * 1e3;
    p50(&r.single) - p50(&r.floor) - p50(api_floor)
}

fn headline(r: &Results) -> String {
    format!(
        "one pod p50 {} ms (raw floor beside it {} ms); batch of {} first/last {:.2}/{:.2} s; RSS idle {:.1} MiB, busy {:.1} MiB",
        ms(r.single.summary().p50),
        ms(r.floor.summary().p50),
        r.batch.len(),
        r.batch.summary().min.as_secs_f64(),
        r.batch_all.as_secs_f64(),
        r.idle.1,
        r.busy.1
    )
}

/// A batch's first pod, and its schedule as the runtime saw it.
fn print_schedule(node: &str, r: &Results) {
    let Some(first) = r.schedule.first() else {
        return;
    };
    println!(
        "{node}: the first pod Running after {:.0} ms, {:.0} ms after its sandbox was begun \
         (container created {:.0} ms, started {:.0} ms after it)\n",
        first.running.as_secs_f64() * 1e3,
        (first.running - first.sandbox_begun).as_secs_f64() * 1e3,
        (first.container_created - first.sandbox_begun).as_secs_f64() * 1e3,
        (first.container_started - first.sandbox_begun).as_secs_f64() * 1e3,
    );
    println!(
        "### {node}: sandbox begun → container created, each pod\n\n{}\n{}\n",
        Summary::HEADER,
        schedule::sandbox_to_container(&r.schedule)
            .summary()
            .row(node)
    );
    println!(
        "### {node}: the batch's schedule (containerd's timestamps)\n\n{}",
        schedule::table(&r.schedule, 10)
    );
}

/// CPU seconds each kind of process used while the batch started (2 cores here: the
/// runtime, the control plane and the node share them), and the burst's floors beside.
fn print_batch_cpu(n: usize, floors: &[BurstFloor], all: &[(NodeKind, Results)]) {
    let rows: Vec<(String, Duration, &BTreeMap<&str, Duration>)> = floors
        .iter()
        .map(|f| (format!("floor: {}", f.what), f.took, &f.cpu))
        .chain(
            all.iter()
                .map(|(k, r)| (k.label().to_string(), r.batch_all, &r.batch_cpu)),
        )
        .collect();
    let kinds: std::collections::BTreeSet<&str> =
        rows.iter().flat_map(|r| r.2.keys().copied()).collect();
    let head: Vec<&str> = kinds.into_iter().collect();
    println!(
        "## {n} at once, and the floors of the same burst ({} calls in flight, podvisor's default bound): CPU seconds used until the last ran\n\n| what | until the last | × the kubelet's | {} |\n|---|---:|---:|{}",
        podvisor_cri::client::default_mutations(),
        head.join(" | "),
        "---:|".repeat(head.len())
    );
    let kubelet = all
        .iter()
        .find(|(k, _)| *k == NodeKind::Kubelet)
        .map(|(_, r)| r.batch_all.as_secs_f64());
    for (label, took, cpu) in rows {
        let cells: Vec<String> = head
            .iter()
            .map(|h| format!("{:.1}", cpu.get(h).map_or(0.0, Duration::as_secs_f64)))
            .collect();
        let ratio = kubelet.map_or("–".into(), |k| format!("{:.2}×", took.as_secs_f64() / k));
        println!(
            "| {label} | {:.2} s | {ratio} | {} |",
            took.as_secs_f64(),
            cells.join(" | ")
        );
    }
    println!();
}

/// The API requests served (every client's) while each burst ran, per pod, the kinds
/// of the most first.
fn print_requests(n: usize, floors: &[BurstFloor], all: &[(NodeKind, Results)]) {
    let mut columns: Vec<(String, &Vec<(String, u64)>)> = floors
        .iter()
        .filter(|f| !f.requests.is_empty())
        .map(|f| (format!("floor: {}", f.what), &f.requests))
        .collect();
    columns.extend(
        all.iter()
            .map(|(k, r)| (k.label().to_string(), &r.batch_requests)),
    );
    let mut kinds: Vec<&str> = Vec::new();
    for (_, reqs) in &columns {
        for (kind, _) in reqs.iter().take(12) {
            if !kinds.contains(&kind.as_str()) {
                kinds.push(kind);
            }
        }
    }
    let labels: Vec<&str> = columns.iter().map(|c| c.0.as_str()).collect();
    println!(
        "## API requests served while {n} started, per pod (every client's, from the API server's apiserver_request_total)\n\n| request | {} |\n|---|{}",
        labels.join(" | "),
        "---:|".repeat(labels.len())
    );
    let per_pod = |reqs: &[(String, u64)], kind: Option<&str>| {
        let count: u64 = reqs
            .iter()
            .filter(|(k, _)| kind.is_none_or(|kind| k == kind))
            .map(|(_, c)| c)
            .sum();
        format!("{:.2}", count as f64 / n.max(1) as f64)
    };
    for kind in kinds {
        let cells: Vec<String> = columns.iter().map(|c| per_pod(c.1, Some(kind))).collect();
        println!("| {kind} | {} |", cells.join(" | "));
    }
    let total: Vec<String> = columns.iter().map(|c| per_pod(c.1, None)).collect();
    println!("| all | {} |\n", total.join(" | "));
}
