//! The node's API side of the tree: the durable store (on an arbiter of its own, since a
//! write waits for fsync), the typed client over it, and the actors that connect the
//! kubelet to it (the status writer, the API pod source, the node registrar) and the
//! controllers, each with its event recorder. Built from addresses reserved before either
//! side of the tree, so no actor here waits for another to exist.

use std::sync::Arc;

use podvisor_actors::{ActorRef, ChildSpec, Reserved};
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::pod_security::PodSecurity;
use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_client::{Api, Client};
use podvisor_controllers::replicaset::ReplicaSetController;
use podvisor_controllers::taint_eviction::TaintEviction;
use podvisor_kubelet::agent::Agent;
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_node::node::{NodeFacts, NodeRegistrar, Unhealthy};
use podvisor_node::source::ApiPodSource;
use podvisor_node::status::StatusWriter;
use podvisor_store::{Admission, LocalClient, StoreActor, StoreConfig};

use super::AgentConfig;

/// The node side's actors the kubelet names: reserved first.
pub(crate) struct NodeAddresses {
    pub writer: ActorRef<StatusWriter>,
    pub source: ActorRef<ApiPodSource>,
    writer_slot: Reserved<StatusWriter>,
    source_slot: Reserved<ApiPodSource>,
}

impl NodeAddresses {
    pub fn reserve() -> Self {
        let (writer, writer_slot) = ChildSpec::reserve::<StatusWriter>()
            .capacity(1 << 16)
            .open();
        let (source, source_slot) = ChildSpec::reserve::<ApiPodSource>().open();
        Self {
            writer,
            source,
            writer_slot,
            source_slot,
        }
    }
}

/// The node side, in start order: what the kubelet writes to starts before it
/// (`first`), what feeds it and what acts on the API after it (`last`).
pub(crate) struct NodeSide {
    pub store: ActorRef<StoreActor>,
    pub first: Vec<ChildSpec>,
    pub last: Vec<ChildSpec>,
}

fn store(cfg: &AgentConfig, node_name: &str) -> (ActorRef<StoreActor>, ChildSpec) {
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
    ChildSpec::of(move || {
        StoreActor::new(store_cfg.clone(), queue).with_admission(admission.clone())
    })
    .arbiter(actix::Arbiter::new().handle())
    .capacity(1 << 14)
    .build()
}

/// An event recorder reporting as `component` on this node.
fn recorder(client: &Client, component: &str, node: &str) -> (ActorRef<EventRecorder>, ChildSpec) {
    let reporter = Reporter {
        component: component.to_string(),
        host: node.to_string(),
    };
    let events = Api::all(client.clone());
    ChildSpec::of(move || EventRecorder::new(reporter.clone(), events.clone()))
        .key(component)
        .capacity(1 << 12)
        .build()
}

/// The controllers on the client, each with its event recorder.
fn controllers(client: &Client, node: &str) -> Vec<ChildSpec> {
    let (events, events_spec) = recorder(client, "taint-eviction-controller", node);
    let (c, n) = (client.clone(), node.to_string());
    let (_, taints) =
        ChildSpec::of(move || TaintEviction::new(n.clone(), c.clone(), events.recipient()))
            .capacity(1 << 12)
            .build();
    let (rs_events, rs_events_spec) = recorder(client, "replicaset-controller", node);
    let (c, n) = (client.clone(), node.to_string());
    let (_, rs) =
        ChildSpec::of(move || ReplicaSetController::new(&n, c.clone(), rs_events.recipient()))
            .capacity(1 << 14)
            .build();
    vec![events_spec, taints, rs_events_spec, rs]
}

/// The node side, bound to its reserved addresses and to the kubelet's actors.
pub(crate) fn build(
    cfg: &AgentConfig,
    node_name: &str,
    own: NodeAddresses,
    kubelet: &Agent,
    facts: NodeFacts,
) -> NodeSide {
    let (store, store_spec) = store(cfg, node_name);
    let client = LocalClient::client(&store);
    let (events, events_spec) = recorder(&client, "kubelet", node_name);
    let (node, c, republish) = (
        node_name.to_string(),
        client.clone(),
        kubelet.status_manager.recipient(),
    );
    let writer = own.writer_slot.with(move || {
        StatusWriter::new(&node, c.clone(), events.recipient())
            .with_republish(Some(republish.clone()))
    });
    let (node, c, sink) = (
        node_name.to_string(),
        client.clone(),
        kubelet.sync_loop.recipient(),
    );
    let source = own
        .source_slot
        .with(move || ApiPodSource::new(&node, c.clone(), sink.clone()));
    let pleg = kubelet.pleg_health.clone();
    let health = Arc::new(move || pleg.check().map_err(|e| Unhealthy(e.to_string())));
    let c = client.clone();
    let (_, registrar) =
        ChildSpec::of(move || NodeRegistrar::new(facts.clone(), health.clone(), c.clone())).build();
    let mut last = vec![source, registrar];
    last.extend(controllers(&client, node_name));
    NodeSide {
        store,
        first: vec![store_spec, events_spec, writer],
        last,
    }
}
