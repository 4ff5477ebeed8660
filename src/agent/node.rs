//! The node's API side of the tree: the durable store (on an arbiter of its own, since a
//! write waits for fsync), the typed client over it, and the actors that connect the
//! kubelet to it (the status writer, the API pod source, the node registrar) and the
//! controllers, each with its event recorder; in a cluster, the links to it (the cluster's
//! pods and Node copied into the store, the node's statuses copied up, the Lease). Built
//! from addresses reserved before either side of the tree, so no actor here waits for
//! another to exist.

use std::sync::Arc;

use podvisor_actors::{ActorRef, ChildSpec, Recipient, Reserved};
use podvisor_apiserver::cluster_owned::ClusterOwned;
use podvisor_apiserver::nodefit::NodeFit;
use podvisor_apiserver::pod_security::PodSecurity;
use podvisor_apiserver::service_accounts::ServiceAccounts;
use podvisor_apiserver::{NodeInfo, ObjectAdmission};
use podvisor_client::{Api, Client};
use podvisor_cluster::{CertRotation, NodeLease, RemoteClient, Rotation};
use podvisor_controllers::accounts::AccountsController;
use podvisor_controllers::taint_eviction::TaintEviction;
use podvisor_controllers::{deployment, job, replicaset};
use podvisor_kubelet::agent::Agent;
use podvisor_machinery::controller::{Controller, Reconciler};
use podvisor_machinery::events::{EventRecorder, RecordEvent, Reporter};
use podvisor_node::cluster::{ClusterReplica, ClusterUplink, FirstCopies};
use podvisor_node::node::{NodeFacts, NodeRegistrar, Unhealthy};
use podvisor_node::source::ApiPodSource;
use podvisor_node::status::StatusWriter;
use podvisor_node::status::shared::SharedStatuses;
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

/// The store, with the admission the node's API applies; the tree builds it before either
/// side (the kubelet reads ConfigMaps and Secrets from it).
pub(crate) fn store(cfg: &AgentConfig, node_name: &str) -> (ActorRef<StoreActor>, ChildSpec) {
    let store_cfg = StoreConfig {
        path: cfg.state_dir.join("store.redb"),
        window: cfg.api.watch_window,
    };
    let queue = cfg.api.watcher_queue;
    let mut admission: Vec<Arc<dyn Admission>> = vec![
        Arc::new(ObjectAdmission::new(NodeInfo {
            node_name: node_name.to_string(),
        })),
        Arc::new(NodeFit::new(node_name)),
        Arc::new(PodSecurity::new(cfg.api.pod_security)),
    ];
    // In a cluster the node's API is a view of the cluster's pods, ReplicaSets and Node;
    // standalone its pods run as service accounts, as in a cluster.
    match &cfg.cluster.kubeconfig {
        Some(kubeconfig) => admission.push(Arc::new(ClusterOwned {
            cluster: kubeconfig.display().to_string(),
        })),
        None => admission.push(Arc::new(ServiceAccounts)),
    }
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

/// The taint eviction scheduler on the store's pods and Node, with its event recorder.
fn taint_eviction(client: &Client, node_api: &Client, node: &str) -> Vec<ChildSpec> {
    let (events, events_spec) = recorder(node_api, "taint-eviction-controller", node);
    let (c, n) = (client.clone(), node.to_string());
    let (_, taints) =
        ChildSpec::of(move || TaintEviction::new(n.clone(), c.clone(), events.recipient()))
            .capacity(1 << 12)
            .build();
    vec![events_spec, taints]
}

/// The controllers of a node standing alone, each with its event recorder (in a cluster
/// the control plane runs the ReplicaSet and Deployment controllers).
fn controllers(client: &Client, node_api: &Client, node: &str, ca_pem: &str) -> Vec<ChildSpec> {
    let mut specs = taint_eviction(client, node_api, node);
    let (c, ca) = (client.clone(), ca_pem.to_string());
    let (_, accounts) = ChildSpec::of(move || AccountsController::new(c.clone(), &ca)).build();
    specs.push(accounts);
    let n = node.to_string();
    specs.extend(controller(client, node_api, node, 1 << 14, move |c, e| {
        replicaset::controller(&n, c, e)
    }));
    specs.extend(controller(
        client,
        node_api,
        node,
        1 << 12,
        deployment::controller,
    ));
    let n = node.to_string();
    specs.extend(controller(client, node_api, node, 1 << 12, move |c, e| {
        job::controller(&n, c, e)
    }));
    specs
}

/// One controller of the machinery's runtime, with its event recorder.
fn controller<R: Reconciler>(
    client: &Client,
    node_api: &Client,
    node: &str,
    capacity: usize,
    make: impl Fn(Client, Recipient<RecordEvent>) -> Controller<R> + Send + Sync + 'static,
) -> [ChildSpec; 2] {
    let (events, events_spec) = recorder(node_api, R::KIND, node);
    let c = client.clone();
    let (_, spec) = ChildSpec::of(move || make(c.clone(), events.recipient()))
        .capacity(capacity)
        .build();
    [events_spec, spec]
}

/// The cluster this node is part of, when it is: the client acting as the node there, and
/// the rotation of its credentials when they are the node's own.
pub(crate) type Cluster = Option<(RemoteClient, Option<Rotation>)>;

/// The node side, bound to its reserved addresses and to the kubelet's actors.
pub(crate) fn build(
    node_name: &str,
    own: NodeAddresses,
    kubelet: &Agent,
    (facts, cluster, ca_pem): (NodeFacts, Cluster, Option<String>),
    (store, store_spec): (ActorRef<StoreActor>, ChildSpec),
) -> NodeSide {
    let local = LocalClient::client(&store);
    // The API the Node, events and static pods' mirrors live in: the cluster's when there
    // is one (where people look for them), else the store.
    let node_api = cluster
        .as_ref()
        .map_or(local.clone(), |(r, _)| Client::new(r.clone()));
    let (events, events_spec) = recorder(&node_api, "kubelet", node_name);
    let shared = SharedStatuses::default();
    let writer = status_writer(
        node_name,
        own.writer_slot,
        kubelet,
        (&local, &node_api),
        (events, shared.clone()),
    );
    let (node, c, sink) = (
        node_name.to_string(),
        local.clone(),
        kubelet.sync_loop.recipient(),
    );
    let source = own
        .source_slot
        .with(move || ApiPodSource::new(&node, c.clone(), sink.clone()));
    let pleg = kubelet.pleg_health.clone();
    let health = Arc::new(move || pleg.check().map_err(|e| Unhealthy(e.to_string())));
    let (c, pressure, taints) = (
        node_api.clone(),
        kubelet.pressure.clone(),
        cluster.is_none(),
    );
    let (_, registrar) = ChildSpec::of(move || {
        NodeRegistrar::new(facts.clone(), health.clone(), c.clone())
            .with_pressure(pressure.clone(), taints)
    })
    .build();
    let mut last = vec![source, registrar];
    match &cluster {
        None => last.extend(controllers(
            &local,
            &local,
            node_name,
            ca_pem.as_deref().unwrap_or_default(),
        )),
        Some((remote, rotation)) => {
            last.extend(cluster_links(node_name, &local, remote, &shared));
            last.extend(rotation.clone().map(|r| {
                let remote = remote.clone();
                ChildSpec::of(move || CertRotation::new(r.clone(), &remote))
                    .build()
                    .1
            }));
            last.extend(taint_eviction(&local, &node_api, node_name));
        }
    }
    NodeSide {
        store,
        first: vec![store_spec, events_spec, writer],
        last,
    }
}

/// The status writer: `kubelet`'s statuses into `local`, static pods' mirrors into
/// `node_api`, each pod's newest status published in `shared`.
fn status_writer(
    node: &str,
    slot: Reserved<StatusWriter>,
    kubelet: &Agent,
    (local, node_api): (&Client, &Client),
    (events, shared): (ActorRef<EventRecorder>, SharedStatuses),
) -> ChildSpec {
    let (node, c, mirrors) = (node.to_string(), local.clone(), node_api.clone());
    let republish = kubelet.status_manager.recipient();
    slot.with(move || {
        StatusWriter::new(&node, c.clone(), events.recipient())
            .with_republish(Some(republish.clone()))
            .with_mirrors(mirrors.clone())
            .with_shared(shared.clone())
    })
}

/// In a cluster: its pods and Node copied into the store, the node's statuses and
/// deletions copied up, and the node's Lease.
fn cluster_links(
    node: &str,
    local: &Client,
    remote: &RemoteClient,
    shared: &SharedStatuses,
) -> Vec<ChildSpec> {
    let cluster = Client::new(remote.clone());
    let first = FirstCopies::default();
    let (n, l, c, f) = (
        node.to_string(),
        local.clone(),
        cluster.clone(),
        first.clone(),
    );
    let (_, replica) = ChildSpec::of(move || {
        ClusterReplica::new(&n, c.clone(), l.clone()).with_first_copies(f.clone())
    })
    .capacity(1 << 14)
    .build();
    let (n, l, c, s) = (node.to_string(), local.clone(), cluster, shared.clone());
    let (_, uplink) = ChildSpec::of(move || {
        ClusterUplink::new(&n, l.clone(), c.clone())
            .with_shared(s.clone())
            .with_first_copies(first.clone())
    })
    .capacity(1 << 14)
    .build();
    let (n, r) = (node.to_string(), remote.clone());
    let (_, lease) = ChildSpec::of(move || NodeLease::new(&n, &r)).build();
    vec![replica, uplink, lease]
}
