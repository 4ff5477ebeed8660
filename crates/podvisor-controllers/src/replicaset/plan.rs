//! One sync of a ReplicaSet, decided as plain data from its cached pods: which orphans to
//! adopt and which pods to release (`claimPods`), and how many pods to create or which to
//! delete (`manageReplicas`, at most 500 per sync, only when the expectations are met and
//! the ReplicaSet is not being deleted).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;

use super::pods::{controller_of, is_active, labels, selects};
use super::rank;

/// At most this many creates or deletes in one sync (Kubernetes' `burstReplicas`).
pub const BURST: usize = 500;

#[derive(Debug, Default)]
pub enum Manage {
    #[default]
    Nothing,
    Create(usize),
    Delete(Vec<Arc<Pod>>),
}

#[derive(Debug, Default)]
pub struct Plan {
    /// Active orphans that match: to adopt.
    pub adopt: Vec<Arc<Pod>>,
    /// Pods it controls that no longer match: to release.
    pub release: Vec<Arc<Pod>>,
    /// The active pods it controls once the adoptions are done: what the status counts.
    pub claimed: Vec<Arc<Pod>>,
    pub manage: Manage,
}

fn deleting(rs: &ReplicaSet) -> bool {
    rs.metadata.deletion_timestamp.is_some()
}

/// The plan for `rs` among the pods of its namespace.
pub fn plan<'a>(
    rs: &ReplicaSet,
    namespace_pods: impl Iterator<Item = &'a Arc<Pod>>,
    may_manage: bool,
    now_ns: i128,
) -> Plan {
    let mut p = Plan::default();
    let uid = rs.metadata.uid.as_deref().unwrap_or_default();
    let selector = &rs.spec.selector;
    for pod in namespace_pods.filter(|p| is_active(p)) {
        let matches = selects(selector, &labels(pod));
        match controller_of(pod) {
            Some(r) if r.uid != uid => {}
            Some(_) if matches => p.claimed.push(pod.clone()),
            Some(_) if !deleting(rs) => p.release.push(pod.clone()),
            Some(_) => {}
            None if matches && !deleting(rs) => {
                p.adopt.push(pod.clone());
                p.claimed.push(pod.clone());
            }
            None => {}
        }
    }
    if may_manage && !deleting(rs) {
        let want = rs.spec.replicas.unwrap_or(1).max(0) as usize;
        let have = p.claimed.len();
        p.manage = match have.cmp(&want) {
            std::cmp::Ordering::Less => Manage::Create((want - have).min(BURST)),
            std::cmp::Ordering::Greater => Manage::Delete(rank::to_delete(
                &p.claimed,
                (have - want).min(BURST),
                now_ns,
            )),
            std::cmp::Ordering::Equal => Manage::Nothing,
        };
    }
    p
}

/// Slow start: batch sizes 1, 2, 4, ... adding up to `n`.
pub fn batches(n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut left, mut size) = (n, 1);
    while left > 0 {
        let b = size.min(left);
        out.push(b);
        left -= b;
        size *= 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rs(replicas: i32, deleting: bool) -> ReplicaSet {
        let mut v = json!({"metadata": {"name": "web", "namespace": "default", "uid": "rs-1"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}}});
        if deleting {
            v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        }
        serde_json::from_value(v).unwrap()
    }

    fn pod(name: &str, app: &str, owner: Option<&str>, f: impl FnOnce(&mut Value)) -> Arc<Pod> {
        let mut v = json!({"metadata": {"name": name, "uid": name, "labels": {"app": app}},
            "status": {"phase": "Running"}});
        if let Some(o) = owner {
            v["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": o, "controller": true}]);
        }
        f(&mut v);
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn claims_adopt_matching_orphans_release_strays_and_leave_others_alone() {
        let pods = [
            pod("mine", "web", Some("rs-1"), |_| {}),
            pod("stray", "db", Some("rs-1"), |_| {}),
            pod("orphan", "web", None, |_| {}),
            pod("other-owner", "web", Some("rs-2"), |_| {}),
            pod("unrelated", "db", None, |_| {}),
            pod("done", "web", None, |v| {
                v["status"]["phase"] = "Succeeded".into()
            }),
            pod("going", "web", None, |v| {
                v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into()
            }),
        ];
        let p = plan(&rs(2, false), pods.iter(), true, 0);
        assert_eq!(names(&p.adopt), ["orphan"]);
        assert_eq!(names(&p.release), ["stray"]);
        assert_eq!(names(&p.claimed), ["mine", "orphan"]);
        assert!(matches!(p.manage, Manage::Nothing));
        let gone = plan(&rs(2, true), pods.iter(), true, 0);
        assert!(
            gone.adopt.is_empty() && gone.release.is_empty(),
            "a deleting owner adopts and releases nothing"
        );
        assert!(matches!(gone.manage, Manage::Nothing));
    }

    #[test]
    fn it_manages_only_when_allowed_and_at_most_a_burst() {
        let mine: Vec<Arc<Pod>> = (0..3)
            .map(|i| pod(&format!("p{i}"), "web", Some("rs-1"), |_| {}))
            .collect();
        assert!(matches!(
            plan(&rs(5, false), mine.iter(), true, 0).manage,
            Manage::Create(2)
        ));
        assert!(
            matches!(
                plan(&rs(5, false), mine.iter(), false, 0).manage,
                Manage::Nothing
            ),
            "expectations pending"
        );
        assert!(matches!(
            plan(&rs(10_000, false), mine.iter(), true, 0).manage,
            Manage::Create(BURST)
        ));
        match plan(&rs(1, false), mine.iter(), true, 0).manage {
            Manage::Delete(d) => assert_eq!(d.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn slow_start_doubles() {
        assert_eq!(batches(10), [1, 2, 4, 3]);
        assert_eq!(batches(1), [1]);
        assert!(batches(0).is_empty());
    }
}
