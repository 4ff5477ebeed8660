//! What differs between kinds in the store's bookkeeping: the status a create starts
//! with, whose status a write keeps, what counts as a spec change, and the time a node's
//! NoExecute taint appeared.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DeploymentStatus, ReplicaSetStatus};
use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::api::core::v1::{NamespaceStatus, PodCondition, PodStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use podvisor_client::{AnyObject, Error};
use podvisor_core::pod::kubelet_owns_condition;

/// Status is the server's to set: what a create asks for is replaced by the kind's first.
pub(crate) fn reset_status(o: &mut AnyObject) {
    match o {
        AnyObject::Pod(p) => {
            Arc::make_mut(p).status = Some(PodStatus {
                phase: Some("Pending".into()),
                ..PodStatus::default()
            });
        }
        AnyObject::ReplicaSet(rs) => {
            Arc::make_mut(rs).status = Some(ReplicaSetStatus::default());
        }
        AnyObject::Deployment(d) => {
            Arc::make_mut(d).status = Some(DeploymentStatus::default());
        }
        AnyObject::Job(j) => Arc::make_mut(j).status = Some(JobStatus::default()),
        AnyObject::Namespace(n) => {
            Arc::make_mut(n).status = Some(NamespaceStatus {
                phase: Some("Active".into()),
                ..NamespaceStatus::default()
            });
        }
        _ => {}
    }
}

/// A Job without a manual selector selects its pods by its UID, and its template carries
/// that UID and the Job's name as labels (both spellings, as kube-apiserver writes them).
pub(crate) fn generate_selector(o: &mut AnyObject) {
    let AnyObject::Job(j) = o else { return };
    let j = Arc::make_mut(j);
    let uid = j.metadata.uid.clone().unwrap_or_default();
    let name = j.metadata.name.clone().unwrap_or_default();
    let Some(spec) = j.spec.as_mut() else { return };
    if spec.manual_selector == Some(true) || spec.selector.is_some() {
        return;
    }
    let labels = spec.template.metadata.get_or_insert_with(Default::default);
    let labels = labels.labels.get_or_insert_with(Default::default);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("job-name", &name),
    ] {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.clone());
    }
    let selects = [("batch.kubernetes.io/controller-uid".to_string(), uid)];
    spec.selector = Some(LabelSelector {
        match_labels: Some(selects.into_iter().collect()),
        match_expressions: None,
    });
}

/// Gives `to` the status of `from` (both of one kind with a status subresource).
pub(crate) fn copy_status(to: &mut AnyObject, from: &AnyObject) {
    match (to, from) {
        (AnyObject::Pod(t), AnyObject::Pod(f)) => Arc::make_mut(t).status = f.status.clone(),
        (AnyObject::Node(t), AnyObject::Node(f)) => Arc::make_mut(t).status = f.status.clone(),
        (AnyObject::Namespace(t), AnyObject::Namespace(f)) => {
            Arc::make_mut(t).status = f.status.clone();
        }
        (AnyObject::ReplicaSet(t), AnyObject::ReplicaSet(f)) => {
            Arc::make_mut(t).status = f.status.clone();
        }
        (AnyObject::Deployment(t), AnyObject::Deployment(f)) => {
            Arc::make_mut(t).status = f.status.clone();
        }
        (AnyObject::Job(t), AnyObject::Job(f)) => Arc::make_mut(t).status = f.status.clone(),
        _ => {}
    }
}

/// A pod's conditions that the kubelet does not compute (others set them).
pub(crate) fn foreign_conditions(o: &AnyObject) -> Vec<PodCondition> {
    let AnyObject::Pod(p) = o else {
        return Vec::new();
    };
    let all = p.status.as_ref().and_then(|s| s.conditions.as_deref());
    all.unwrap_or_default()
        .iter()
        .filter(|c| !kubelet_owns_condition(&c.type_))
        .cloned()
        .collect()
}

/// Sets `foreign` (conditions others set, as the cluster has them) on pod `o`, over its
/// own of the same types; one of its own the cluster does not have yet (the node's taint
/// eviction's `DisruptionTarget`, not yet written up) is kept.
pub(crate) fn set_foreign_conditions(o: &mut AnyObject, foreign: Vec<PodCondition>) {
    let AnyObject::Pod(p) = o else {
        return;
    };
    if p.status.is_none() && foreign.is_empty() {
        return;
    }
    let status = Arc::make_mut(p).status.get_or_insert_with(Default::default);
    let mut conditions: Vec<PodCondition> = status.conditions.take().unwrap_or_default();
    conditions.retain(|c| !foreign.iter().any(|f| f.type_ == c.type_));
    conditions.extend(foreign);
    status.conditions = (!conditions.is_empty()).then_some(conditions);
}

/// A pod's `pods/ephemeralcontainers` update: the stored pod with only its ephemeral
/// containers (and its resourceVersion, a precondition) taken from `new`, as
/// kube-apiserver's `dropNonEphemeralContainerUpdates`.
pub(crate) fn with_ephemeral_containers(
    old: &AnyObject,
    new: &AnyObject,
) -> Result<AnyObject, Error> {
    let (AnyObject::Pod(o), AnyObject::Pod(n)) = (old, new) else {
        return Err(Error::BadRequest(
            "only pods have ephemeral containers".into(),
        ));
    };
    let mut pod = (**o).clone();
    let wanted = n.spec.as_ref().and_then(|s| s.ephemeral_containers.clone());
    if let Some(spec) = pod.spec.as_mut() {
        spec.ephemeral_containers = wanted;
    }
    pod.metadata.resource_version = n.metadata.resource_version.clone();
    Ok(AnyObject::new(pod))
}

/// A pod's `pods/resize` update: the stored pod with only its containers' (and sidecars')
/// resources and resize policies taken from `new`, as kube-apiserver's resize strategy
/// (`dropNonResizeUpdates`); what else differs is ignored there too. Containers are matched
/// by name; the API's validation refuses what may not change.
pub(crate) fn with_resize(old: &AnyObject, new: &AnyObject) -> Result<AnyObject, Error> {
    let (AnyObject::Pod(o), AnyObject::Pod(n)) = (old, new) else {
        return Err(Error::BadRequest("only pods are resized".into()));
    };
    let mut pod = (**o).clone();
    if let (Some(spec), Some(wanted)) = (pod.spec.as_mut(), n.spec.as_ref()) {
        same_names("containers", &spec.containers, &wanted.containers, n)?;
        let none = Vec::new();
        let (ours, theirs) = (&spec.init_containers, &wanted.init_containers);
        let (ours, theirs) = (
            ours.as_ref().unwrap_or(&none),
            theirs.as_ref().unwrap_or(&none),
        );
        same_names("initContainers", ours, theirs, n)?;
        take_resources(&mut spec.containers, &wanted.containers);
        if let (Some(init), Some(w)) = (spec.init_containers.as_mut(), &wanted.init_containers) {
            take_resources(init, w);
        }
    }
    pod.metadata.resource_version = n.metadata.resource_version.clone();
    Ok(AnyObject::new(pod))
}

/// A resize names the pod's containers as they are, in their order (kube-apiserver's
/// `validatePodResizeContainerOrdering`).
fn same_names(
    field: &str,
    ours: &[k8s_openapi::api::core::v1::Container],
    theirs: &[k8s_openapi::api::core::v1::Container],
    pod: &k8s_openapi::api::core::v1::Pod,
) -> Result<(), Error> {
    let detail = if ours.len() != theirs.len() {
        "containers may not be added or removed on resize"
    } else if ours.iter().zip(theirs).any(|(a, b)| a.name != b.name) {
        "containers may not be renamed or reordered on resize"
    } else {
        return Ok(());
    };
    Err(Error::Invalid {
        kind: "Pod".into(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        errors: podvisor_core::validation::FieldErrors(vec![
            podvisor_core::validation::FieldError::forbidden(
                &podvisor_core::validation::FieldPath::new("spec").child(field),
                detail,
            ),
        ]),
    })
}

fn take_resources(
    ours: &mut [k8s_openapi::api::core::v1::Container],
    wanted: &[k8s_openapi::api::core::v1::Container],
) {
    for c in ours {
        if let Some(w) = wanted.iter().find(|w| w.name == c.name) {
            c.resources = w.resources.clone();
            c.resize_policy = w.resize_policy.clone();
        }
    }
}

/// Whether the spec changed (what bumps `metadata.generation`).
pub(crate) fn spec_differs(old: &AnyObject, new: &AnyObject) -> bool {
    match (old, new) {
        (AnyObject::Pod(a), AnyObject::Pod(b)) => a.spec != b.spec,
        (AnyObject::Node(a), AnyObject::Node(b)) => a.spec != b.spec,
        (AnyObject::Namespace(a), AnyObject::Namespace(b)) => a.spec != b.spec,
        (AnyObject::ReplicaSet(a), AnyObject::ReplicaSet(b)) => a.spec != b.spec,
        (AnyObject::Deployment(a), AnyObject::Deployment(b)) => a.spec != b.spec,
        (AnyObject::Job(a), AnyObject::Job(b)) => a.spec != b.spec,
        _ => false,
    }
}

fn same_taint(a: &Taint, b: &Taint) -> bool {
    (&a.key, &a.value, &a.effect) == (&b.key, &b.value, &b.effect)
}

/// A node's NoExecute taints carry `timeAdded`: kept from the stored taint of the same key,
/// value and effect, else the time it first appears (unless the client gave one). The
/// taint eviction scheduler counts tolerations from it, so a restart never restarts a
/// countdown.
pub(crate) fn stamp_taints(new: &mut AnyObject, old: Option<&AnyObject>) {
    let AnyObject::Node(node) = new else { return };
    let before: Vec<Taint> = match old {
        Some(AnyObject::Node(o)) => o.spec.as_ref().and_then(|s| s.taints.clone()),
        _ => None,
    }
    .unwrap_or_default();
    let needs = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.effect == "NoExecute"));
    if !needs {
        return;
    }
    let taints = Arc::make_mut(node)
        .spec
        .as_mut()
        .and_then(|s| s.taints.as_mut())
        .into_iter()
        .flatten();
    for t in taints.filter(|t| t.effect == "NoExecute") {
        let kept = before
            .iter()
            .find(|o| same_taint(o, t))
            .and_then(|o| o.time_added.clone());
        match kept {
            Some(at) => t.time_added = Some(at),
            None if t.time_added.is_some() => {}
            None => t.time_added = Some(podvisor_core::time::now()),
        }
    }
}
