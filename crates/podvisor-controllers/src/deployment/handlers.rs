//! What a change means to the Deployment controller: a Deployment changed, sync it; a
//! ReplicaSet changed, sync the Deployment controlling it, or (an orphan) those of its
//! namespace that select it, one of which may adopt it; a pod of a Recreate Deployment
//! deleted or finished, sync that Deployment (its new pods wait for the old ones to stop).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use podvisor_client::WatchEvent;
use podvisor_core::labels::selects;
use podvisor_core::{Kind, ObjectKey, PodExt};
use podvisor_machinery::cache::{Cache, Delta};
use podvisor_machinery::reflector::Update;

use super::util::is_recreate;

fn key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Deployment, Some(ns), name)
}

/// The Deployment `rs` names as its controller, when the cache holds that one.
fn owner(deployments: &Cache<Deployment>, rs: &ReplicaSet) -> Option<ObjectKey> {
    let refs = rs.metadata.owner_references.as_ref()?;
    let r = refs.iter().find(|r| r.controller == Some(true))?;
    if r.kind != "Deployment" {
        return None;
    }
    let k = key(
        rs.metadata.namespace.as_deref().unwrap_or_default(),
        &r.name,
    );
    let cached = deployments.get(&k)?;
    (cached.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(k)
}

fn is_orphan(rs: &ReplicaSet) -> bool {
    let refs = rs.metadata.owner_references.iter().flatten();
    !refs.into_iter().any(|r| r.controller == Some(true))
}

/// The Deployments of the ReplicaSet's namespace whose selector matches it.
fn selecting(deployments: &Cache<Deployment>, rs: &ReplicaSet) -> Vec<ObjectKey> {
    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    deployments
        .in_namespace(ns)
        .filter(|d| selects(&d.spec.selector, &labels))
        .map(|d| key(ns, d.metadata.name.as_deref().unwrap_or_default()))
        .collect()
}

/// The Deployments one ReplicaSet change concerns.
pub fn on_replica_set(d: &Delta<ReplicaSet>, deployments: &Cache<Deployment>) -> Vec<ObjectKey> {
    let mut out = Vec::new();
    for rs in [&d.old, &d.new].into_iter().flatten() {
        match owner(deployments, rs) {
            Some(k) => out.push(k),
            None if is_orphan(rs) => out.extend(selecting(deployments, rs)),
            None => {}
        }
    }
    out.dedup();
    out
}

/// The Recreate Deployment whose ReplicaSet controls `pod`, when the caches hold both.
fn recreate_of(
    pod: &Pod,
    sets: &Cache<ReplicaSet>,
    deployments: &Cache<Deployment>,
) -> Option<ObjectKey> {
    let refs = pod.metadata.owner_references.as_ref()?;
    let r = refs.iter().find(|r| r.controller == Some(true))?;
    let ns = pod.metadata.namespace.as_deref();
    let set = sets.get(&ObjectKey::new(Kind::ReplicaSet, ns, &r.name))?;
    if r.kind != "ReplicaSet" || set.metadata.uid.as_deref() != Some(r.uid.as_str()) {
        return None;
    }
    let key = owner(deployments, set)?;
    deployments
        .get(&key)
        .is_some_and(|d| is_recreate(d))
        .then_some(key)
}

/// The Deployments a pod change concerns: a Recreate one whose pod was deleted or
/// finished, as kube-controller-manager's pod handler says (its rollout waits for the old
/// pods to stop, and is not polled). After a list, every Recreate Deployment: a deletion
/// may have been missed.
pub fn on_pod(
    update: &Update<Pod>,
    sets: &Cache<ReplicaSet>,
    deployments: &Cache<Deployment>,
) -> Vec<ObjectKey> {
    let pod = match update {
        Update::Reset(_) => {
            return deployments
                .values()
                .filter(|d| is_recreate(d))
                .map(|d| key_of(d))
                .collect();
        }
        Update::Change(WatchEvent::Deleted(p)) => p,
        Update::Change(WatchEvent::Modified(p)) if p.is_terminal() => p,
        Update::Change(_) => return Vec::new(),
    };
    recreate_of(pod, sets, deployments).into_iter().collect()
}

fn key_of(d: &Deployment) -> ObjectKey {
    key(
        d.metadata.namespace.as_deref().unwrap_or_default(),
        d.metadata.name.as_deref().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn owned<T: serde::de::DeserializeOwned>(
        name: &str,
        uid: &str,
        owner: (&str, &str, &str),
    ) -> Arc<T> {
        let refs = json!([{"apiVersion": "v1", "kind": owner.0, "name": owner.1, "uid": owner.2,
            "controller": true}]);
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default",
            "uid": uid, "ownerReferences": refs}}))
            .unwrap(),
        )
    }

    fn caches(strategy: &str) -> (Cache<ReplicaSet>, Cache<Deployment>) {
        let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web",
            "namespace": "default", "uid": "u-d"},
            "spec": {"selector": {}, "template": {}, "strategy": {"type": strategy}}}))
        .unwrap();
        let mut deployments = Cache::new();
        deployments.apply(Update::Reset(vec![Arc::new(d)]));
        let mut sets = Cache::new();
        sets.apply(Update::Reset(vec![owned(
            "web-1",
            "u-rs",
            ("Deployment", "web", "u-d"),
        )]));
        (sets, deployments)
    }

    fn with_phase(p: &Arc<Pod>, phase: &str) -> Arc<Pod> {
        let mut p = (**p).clone();
        p.status.get_or_insert_default().phase = Some(phase.into());
        Arc::new(p)
    }

    #[test]
    fn a_recreate_deployment_wakes_when_an_old_pod_is_deleted_or_finishes() {
        let (sets, deployments) = caches("Recreate");
        let pod: Arc<Pod> = owned("web-1-a", "u-p", ("ReplicaSet", "web-1", "u-rs"));
        let on = |e| on_pod(&Update::Change(e), &sets, &deployments);
        let web = vec![key("default", "web")];
        assert_eq!(on(WatchEvent::Deleted(pod.clone())), web);
        assert_eq!(on(WatchEvent::Modified(with_phase(&pod, "Succeeded"))), web);
        assert!(on(WatchEvent::Modified(with_phase(&pod, "Running"))).is_empty());
        assert!(on(WatchEvent::Added(pod.clone())).is_empty());
        let stranger: Arc<Pod> = owned("web-1-b", "u-q", ("ReplicaSet", "web-1", "u-other"));
        assert!(
            on(WatchEvent::Deleted(stranger)).is_empty(),
            "another incarnation's"
        );
        let after_list = on_pod(&Update::Reset(Vec::new()), &sets, &deployments);
        assert_eq!(after_list, web);
    }

    #[test]
    fn a_rolling_deployment_is_not_woken_by_its_pods() {
        let (sets, deployments) = caches("RollingUpdate");
        let pod: Arc<Pod> = owned("web-1-a", "u-p", ("ReplicaSet", "web-1", "u-rs"));
        let deleted = Update::Change(WatchEvent::Deleted(pod));
        assert!(on_pod(&deleted, &sets, &deployments).is_empty());
        assert!(on_pod(&Update::Reset(Vec::new()), &sets, &deployments).is_empty());
    }
}
