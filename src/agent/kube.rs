//! The Kubernetes side of the agent: the durable store (on an arbiter of its own, since a
//! write waits for fsync), the HTTPS API that serves it, and the actors that connect the
//! kubelet to it (the API pod source, the status writer, the node registrar).

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use podvisor_actors::{ActorRef, ChildSpec, Recipient};
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::pod_security::PodSecurity;
use podvisor_apiserver::{ApiConfig, ApiServer, ApiState, NodeInfo, ObjectAdmission};
use podvisor_client::{Api, Client};
use podvisor_controllers::replicaset::ReplicaSetController;
use podvisor_controllers::taint_eviction::TaintEviction;
use podvisor_kubelet::pleg::PlegHealth;
use podvisor_kubelet::protocol::sources::SourcePods;
use podvisor_kubelet::protocol::status::RepublishStatuses;
use podvisor_kubelet::stats::GetSummary;
use podvisor_kubelet::status_manager::StatusManager;
use podvisor_kubelet::sync_loop::{Allocatable, SyncLoop};
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_node::node::{NodeFacts, NodeRegistrar, Unhealthy};
use podvisor_node::source::ApiPodSource;
use podvisor_node::status::StatusWriter;
use podvisor_store::{Admission, LocalClient, StoreActor, StoreConfig};

use super::AgentConfig;

/// The sync loop's and the status manager's handles, known only once the kubelet's tree
/// is built.
type LateSink = Arc<OnceLock<Recipient<SourcePods>>>;
type LateStatuses = Arc<OnceLock<Recipient<RepublishStatuses>>>;

pub struct Kube {
    pub store: ActorRef<StoreActor>,
    pub source: ActorRef<ApiPodSource>,
    pub writer: ActorRef<StatusWriter>,
    specs: Vec<ChildSpec>,
    sink: LateSink,
    statuses: LateStatuses,
    node: String,
}

impl Kube {
    pub fn build(cfg: &AgentConfig, node_name: &str) -> Kube {
        let store_cfg = StoreConfig {
            path: cfg.state_dir.join("store.redb"),
            window: cfg.api.watch_window,
        };
        let queue = cfg.api.watcher_queue;
        let admission: Vec<Arc<dyn Admission>> = vec![
            Arc::new(ObjectAdmission::new(NodeInfo {
                node_name: node_name.to_string(),
            })),
            Arc::new(NodeFit::new(node_name)),
            Arc::new(PodSecurity::new(cfg.api.pod_security)),
        ];
        let (store, store_spec) = ChildSpec::of(move || {
            StoreActor::new(store_cfg.clone(), queue).with_admission(admission.clone())
        })
        .arbiter(actix::Arbiter::new().handle())
        .capacity(1 << 14)
        .build();
        let client = LocalClient::client(&store);
        let (events, events_spec) = recorder(&client, "kubelet", node_name);
        let h = client.clone();
        let statuses: LateStatuses = Arc::default();
        let late_statuses = statuses.clone();
        let node = node_name.to_string();
        let (writer, writer_spec) = ChildSpec::of(move || {
            StatusWriter::new(&node, h.clone(), events.recipient())
                .with_republish(late_statuses.get().cloned())
        })
        .capacity(1 << 16)
        .build();
        let sink: LateSink = Arc::default();
        let (late, node, c) = (sink.clone(), node_name.to_string(), client.clone());
        let (source, source_spec) = ChildSpec::of(move || {
            let sink = late.get().expect("wired before start").clone();
            ApiPodSource::new(&node, c.clone(), sink)
        })
        .build();
        Kube {
            store,
            source,
            writer,
            specs: vec![store_spec, events_spec, writer_spec, source_spec],
            sink,
            statuses,
            node: node_name.to_string(),
        }
    }

    /// Every child in start order: the store, the event recorder and the status writer
    /// before the kubelet's actors; the API pod source, the node registrar and the
    /// controllers after them.
    pub fn children(
        self,
        kubelet: Vec<ChildSpec>,
        (sync_loop, status_manager): (&ActorRef<SyncLoop>, &ActorRef<StatusManager>),
        facts: NodeFacts,
        pleg: Arc<PlegHealth>,
    ) -> Vec<ChildSpec> {
        let _ = self.sink.set(sync_loop.recipient());
        let _ = self.statuses.set(status_manager.recipient());
        let client = LocalClient::client(&self.store);
        let health = Arc::new(move || pleg.check().map_err(|e| Unhealthy(e.to_string())));
        let c = client.clone();
        let (_, node_spec) =
            ChildSpec::of(move || NodeRegistrar::new(facts.clone(), health.clone(), c.clone()))
                .build();
        let mut specs = self.specs.into_iter();
        let mut out: Vec<ChildSpec> = specs.by_ref().take(3).collect();
        out.extend(kubelet);
        out.extend(specs);
        out.push(node_spec);
        out.extend(controllers(&client, &self.node));
        out
    }
}

/// The controllers on the store, each with its event recorder.
fn controllers(client: &Client, node_name: &str) -> Vec<ChildSpec> {
    let (events, events_spec) = recorder(client, "taint-eviction-controller", node_name);
    let (c, node) = (client.clone(), node_name.to_string());
    let (_, taints_spec) =
        ChildSpec::of(move || TaintEviction::new(node.clone(), c.clone(), events.recipient()))
            .capacity(1 << 12)
            .build();
    let (rs_events, rs_events_spec) = recorder(client, "replicaset-controller", node_name);
    let (c, node) = (client.clone(), node_name.to_string());
    let (_, rs_spec) =
        ChildSpec::of(move || ReplicaSetController::new(&node, c.clone(), rs_events.recipient()))
            .capacity(1 << 14)
            .build();
    vec![events_spec, taints_spec, rs_events_spec, rs_spec]
}

/// An event recorder reporting as `component` on this node.
fn recorder(
    client: &Client,
    component: &str,
    node_name: &str,
) -> (ActorRef<EventRecorder>, ChildSpec) {
    let reporter = Reporter {
        component: component.to_string(),
        host: node_name.to_string(),
    };
    let events = Api::all(client.clone());
    ChildSpec::of(move || EventRecorder::new(reporter.clone(), events.clone()))
        .key(component)
        .capacity(1 << 12)
        .build()
}

pub fn facts(
    cfg: &AgentConfig,
    node_name: &str,
    alloc: &Allocatable,
    runtime_version: String,
) -> NodeFacts {
    NodeFacts {
        name: node_name.to_string(),
        cpu_milli: super::host_cpu_milli(),
        memory_bytes: super::host_memory_bytes(),
        pods: cfg.allocatable.pods,
        allocatable_cpu_milli: alloc.cpu_milli,
        allocatable_memory_bytes: alloc.memory_bytes,
        runtime_version,
        agent_version: podvisor_core::version::GIT_VERSION.to_string(),
        // Validated with the config.
        taints: cfg
            .node
            .taints
            .iter()
            .filter_map(|t| podvisor_core::taints::parse(t).ok())
            .collect(),
    }
}

pub fn serve(
    cfg: &AgentConfig,
    store: ActorRef<StoreActor>,
    stats: Recipient<GetSummary>,
) -> anyhow::Result<ApiServer> {
    let api = ApiConfig {
        address: cfg.api.address,
        pki_dir: cfg.state_dir.join("pki"),
        kubeconfig: cfg.state_dir.join("kubeconfig"),
    };
    let usage: podvisor_apiserver::resource_metrics::UsageSource = Arc::new(move || {
        let stats = stats.clone();
        Box::pin(async move { stats.send(GetSummary).await.ok().flatten() })
    });
    let state = ApiState {
        store,
        pod_log_dir: cfg.pod_log_dir.clone(),
        usage: Some(usage),
    };
    ApiServer::start(&api, state).context("cannot start the Kubernetes API")
}
