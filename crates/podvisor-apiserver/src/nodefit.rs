//! Node-fit admission: this agent schedules for itself, so a pod created for this node is
//! checked at once, as kube-scheduler's filters and the kubelet's admission would check it,
//! and refused with its reason when it cannot run here (403 Forbidden, the reason as the
//! cause), instead of being stored and then failed:
//!
//! - a NoExecute or NoSchedule taint of the node that the pod does not tolerate
//!   (`TaintToleration`);
//! - a cordoned node (`spec.unschedulable`) unless the pod tolerates
//!   `node.kubernetes.io/unschedulable:NoSchedule` (`NodeUnschedulable`);
//! - a node selector or required node affinity the node's labels do not match
//!   (`NodeAffinity`), and a host port another active pod holds (`NodePorts`), as the
//!   kubelet's admission (`podvisor_core::node_admit`);
//! - the node's allocatable pods, CPU or memory, against the pods already bound to it and
//!   not finished (`OutOfpods`, `OutOfcpu`, `OutOfmemory`).
//!
//! It runs inside the store's write ([`podvisor_store::Admission`]), so two creates cannot
//! both take the last slot. Mirror pods (the node's own static pods) and pods for other
//! nodes pass. Until the node has registered there is nothing to check against; the
//! kubelet's own admission still turns away what does not fit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use podvisor_client::{AnyObject, Error, FieldSelector, Subresource};
use podvisor_core::fit::{self, Allocatable, Requests};
use podvisor_core::node_admit;
use podvisor_core::taints::{self, NO_EXECUTE, NO_SCHEDULE, UNSCHEDULABLE_KEY};
use podvisor_core::{Kind, Phase, quantity};
use podvisor_store::{Admission, Objects, Resource, Selector, StoredObject};

pub struct NodeFit {
    node: String,
    /// Each bound pod's requests, by UID and revision: a pod is parsed once, not at every
    /// create.
    requests: Mutex<HashMap<String, (u64, Requests)>>,
}

fn refuse(name: &str, cause: &'static str, message: String) -> Error {
    Error::Forbidden {
        resource: "pods".into(),
        name: name.to_string(),
        cause: cause.into(),
        message,
    }
}

fn allocatable(node: &Node) -> Option<Allocatable> {
    let a = node.status.as_ref()?.allocatable.as_ref()?;
    let get = |k: &str| a.get(k).map(|q| q.0.as_str());
    Some(Allocatable {
        pods: get("pods")?.parse().ok()?,
        cpu_milli: quantity::parse_milli(get("cpu")?).ok()?,
        memory_bytes: quantity::parse_units(get("memory")?).ok()?,
    })
}

/// Taints and cordon: the scheduler's TaintToleration and NodeUnschedulable filters.
fn check_taints(node: &Node, pod: &Pod, name: &str) -> Result<(), Error> {
    let spec = node.spec.clone().unwrap_or_default();
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    let node_taints = spec.taints.unwrap_or_default();
    if let Some(t) = taints::untolerated(&node_taints, &tolerations, &[NO_EXECUTE, NO_SCHEDULE]) {
        let message = format!(
            "node {} has the taint {{{}}} that the pod does not tolerate",
            node.metadata.name.as_deref().unwrap_or(""),
            taints::describe(t)
        );
        return Err(refuse(name, "TaintToleration", message));
    }
    let cordon = Taint {
        key: UNSCHEDULABLE_KEY.into(),
        effect: NO_SCHEDULE.into(),
        ..Taint::default()
    };
    if spec.unschedulable == Some(true) && taints::used_toleration(&tolerations, &cordon).is_none()
    {
        let message = format!(
            "node {} is unschedulable (cordoned)",
            node.metadata.name.as_deref().unwrap_or("")
        );
        return Err(refuse(name, "NodeUnschedulable", message));
    }
    Ok(())
}

fn finished(o: &StoredObject) -> bool {
    o.field("status.phase")
        .and_then(|p| p.parse::<Phase>().ok())
        .is_some_and(Phase::is_terminal)
}

impl NodeFit {
    pub fn new(node: &str) -> Self {
        Self {
            node: node.to_string(),
            requests: Mutex::default(),
        }
    }

    /// The pods bound to this node, as stored.
    fn bound_objects(&self, store: &dyn Objects) -> Vec<Arc<StoredObject>> {
        let mut sel = Selector::all(Kind::Pod);
        sel.fields = FieldSelector::equals("spec.nodeName", &self.node);
        store.select(&sel)
    }

    /// The requests of the pods bound to this node that still hold resources.
    fn bound(&self, store: &dyn Objects) -> Vec<Requests> {
        let items = self.bound_objects(store);
        let mut cache = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = HashMap::with_capacity(items.len());
        let out = items
            .iter()
            .filter(|o| !finished(o))
            .map(|o| {
                let cached = cache.get(&*o.uid).filter(|c| c.0 == o.revision).copied();
                let entry = cached.unwrap_or_else(|| {
                    let pod = o.typed::<Pod>().unwrap_or_default();
                    (o.revision, Requests::of(&pod))
                });
                seen.insert(o.uid.to_string(), entry);
                entry.1
            })
            .collect();
        *cache = seen;
        out
    }

    /// Node affinity and host ports: the other pods are read only when the pod asks for a
    /// host port.
    fn check_placement(
        &self,
        store: &dyn Objects,
        node: &Node,
        pod: &Pod,
        name: &str,
    ) -> Result<(), Error> {
        let active: Vec<Arc<Pod>> = if node_admit::wants_host_ports(pod) {
            let items = self.bound_objects(store);
            let live = items.iter().filter(|o| !finished(o));
            live.filter_map(|o| o.typed::<Pod>().ok()).collect()
        } else {
            Vec::new()
        };
        let active: Vec<&Pod> = active.iter().map(|p| &**p).collect();
        node_admit::admit(pod, node, &active).map_err(|r| refuse(name, r.reason, r.message))
    }

    fn check_resources(
        &self,
        store: &dyn Objects,
        node: &Node,
        pod: &Pod,
        name: &str,
    ) -> Result<(), Error> {
        let Some(alloc) = allocatable(node) else {
            return Ok(());
        };
        fit::fits(Requests::of(pod), &self.bound(store), &alloc)
            .map_err(|r| refuse(name, r.reason, r.message))
    }
}

/// A resize asks no more than the node's allocatable CPU and memory (kube-apiserver's
/// `PodResizeValidator`, with its words); what the other pods hold is the node's to weigh.
fn resize_fits(pod: &Pod, alloc: &Allocatable, name: &str) -> Result<(), Error> {
    let r = Requests::of(pod);
    let over: Vec<String> = [
        ("cpu", r.cpu_milli, alloc.cpu_milli),
        ("memory", r.memory_bytes, alloc.memory_bytes),
    ]
    .iter()
    .filter(|(_, asked, has)| asked > has)
    .map(|(what, asked, has)| format!("{what}, requested: {asked}, allocatable: {has}"))
    .collect();
    if over.is_empty() {
        return Ok(());
    }
    let message = format!(
        "node didn't have enough allocatable resources: {}",
        over.join("; ")
    );
    Err(refuse(name, "NodeCapacity", message))
}

impl Admission for NodeFit {
    fn admit(
        &self,
        store: &dyn Objects,
        _: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
        sub: Subresource,
    ) -> Result<(), Error> {
        let AnyObject::Pod(pod) = object else {
            return Ok(());
        };
        let bound = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        let mirror = crate::admission::is_mirror(pod);
        let resize = old.is_some() && sub == Subresource::Resize;
        if (old.is_some() && !resize) || bound != Some(self.node.as_str()) || mirror {
            return Ok(());
        }
        let Some(node) = store
            .get(Kind::Node, "", &self.node)
            .and_then(|n| n.typed::<Node>().ok())
        else {
            return Ok(());
        };
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if resize {
            return allocatable(&node).map_or(Ok(()), |a| resize_fits(pod, &a, name));
        }
        check_taints(&node, pod, name)?;
        self.check_placement(store, &node, pod, name)?;
        self.check_resources(store, &node, pod, name)
    }
}
