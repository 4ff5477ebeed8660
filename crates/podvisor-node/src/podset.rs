//! The pods the API source wants, as a plain struct: fed watch events, it answers whether
//! the desired set changed and gives the snapshot the sync loop takes.
//!
//! A change that touches only the status (the agent's own writes) or the resourceVersion is
//! no change to the desired pod: it is seen by comparing the spec and the metadata, with no
//! decoding (the objects are the client's, shared), and sends no snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_client::WatchEvent;
use podvisor_core::pod::CONFIG_SOURCE_ANNOTATION;
use podvisor_core::{Phase, SharedPod};
use tracing::warn;

use crate::{MIRROR_ANNOTATION, SOURCE};

/// One pod held: the pod the kubelet was given. Not the API's object it was made from:
/// later versions are compared with this copy, so the decoded watch event (a whole pod
/// with its status, some 10 KB) is not kept beside it.
struct Held {
    desired: SharedPod,
}

#[derive(Default)]
pub struct PodSet {
    pods: BTreeMap<(String, String), Held>,
}

fn key(p: &Pod) -> (String, String) {
    let m = &p.metadata;
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

pub(crate) fn is_mirror(p: &Pod) -> bool {
    let annotations = p.metadata.annotations.as_ref();
    annotations.is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
}

/// Whether the pod given (`a`, made by `desired`) and the API's `b` agree on all their
/// metadata but what every write changes and the source annotation `desired` adds.
fn same_meta(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    let (a_rest, b_rest) = (
        (
            &a.labels,
            &a.deletion_timestamp,
            &a.deletion_grace_period_seconds,
        ),
        (
            &b.labels,
            &b.deletion_timestamp,
            &b.deletion_grace_period_seconds,
        ),
    );
    (
        &a.uid,
        &a.name,
        &a.namespace,
        &a.owner_references,
        &a.generation,
    ) == (
        &b.uid,
        &b.name,
        &b.namespace,
        &b.owner_references,
        &b.generation,
    ) && a_rest == b_rest
        && annotations(a).eq(annotations(b))
}

/// An object's annotations but the source `desired` sets, in order.
fn annotations(m: &ObjectMeta) -> impl Iterator<Item = (&String, &String)> {
    let all = m.annotations.iter().flatten();
    all.filter(|(k, _)| k.as_str() != CONFIG_SOURCE_ANNOTATION)
}

/// Whether the API's `from` asks the kubelet for nothing the pod it was given (`given`)
/// does not: the status aside, but for the conditions its readiness gates name, which
/// others set and the pod's readiness follows (`desired` keeps them in the copy).
fn same_desire(given: &Pod, from: &Pod) -> bool {
    given.spec == from.spec
        && same_meta(&given.metadata, &from.metadata)
        && gate_conditions(given) == gate_conditions(from)
}

/// The conditions the pod's readiness gates name, as the API has them.
fn gate_conditions(p: &Pod) -> Vec<PodCondition> {
    let gates = p.spec.as_ref().and_then(|s| s.readiness_gates.as_deref());
    let Some(gates) = gates.filter(|g| !g.is_empty()) else {
        return Vec::new();
    };
    let conditions = p.status.as_ref().and_then(|s| s.conditions.as_deref());
    conditions
        .unwrap_or(&[])
        .iter()
        .filter(|c| gates.iter().any(|g| g.condition_type == c.type_))
        .map(|c| PodCondition {
            type_: c.type_.clone(),
            status: c.status.clone(),
            ..Default::default()
        })
        .collect()
}

/// The pod as the kubelet takes it, or `None` for what it must not run (a mirror pod, an
/// object it cannot take). Without the status, which is the agent's own, but for a
/// terminal phase (a pod the API says has finished is not run again, the kubelet's rule,
/// and after an agent restart that phase is how it knows) and the conditions its
/// readiness gates name.
fn desired(from: &Pod) -> Option<SharedPod> {
    if is_mirror(from) {
        return None;
    }
    let phase = from.status.as_ref().and_then(|s| s.phase.clone());
    let terminal = phase.filter(|p| p.parse::<Phase>().is_ok_and(Phase::is_terminal));
    let gates = gate_conditions(from);
    let mut pod = Pod {
        metadata: from.metadata.clone(),
        spec: from.spec.clone(),
        status: (terminal.is_some() || !gates.is_empty()).then(|| PodStatus {
            phase: terminal,
            conditions: (!gates.is_empty()).then_some(gates),
            ..PodStatus::default()
        }),
    };
    pod.metadata.resource_version = None;
    pod.metadata.managed_fields = None;
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(CONFIG_SOURCE_ANNOTATION.into(), SOURCE.into());
    match SharedPod::new(pod) {
        Ok(p) => Some(p),
        Err(e) => {
            let name = from.metadata.name.as_deref().unwrap_or_default();
            warn!(pod = name, error = %e, "stored pod not used");
            None
        }
    }
}

impl PodSet {
    /// Replaces everything with a full list (after a relist). A pod the list shows as it
    /// was keeps the copy already given, as [`PodSet::put`] keeps it.
    pub fn reset(&mut self, items: &[Arc<Pod>]) {
        let mut before = std::mem::take(&mut self.pods);
        for p in items {
            let k = key(p);
            if let Some(held) = before.remove(&k) {
                self.pods.insert(k, held);
            }
            self.put(p);
        }
    }

    /// Takes `from`; whether the desired set changed. A change the kubelet's pod does not
    /// show (a field `same_desire` compares but `desired` drops) keeps the copy already
    /// given, which the sync loop holds too: a second, equal copy would live beside it.
    fn put(&mut self, from: &Arc<Pod>) -> bool {
        let k = key(from);
        if let Some(held) = self.pods.get(&k)
            && same_desire(held.desired.arc(), from)
        {
            return false;
        }
        let Some(desired) = desired(from) else {
            return self.pods.remove(&k).is_some();
        };
        match self.pods.get_mut(&k) {
            Some(held) => {
                let changed = desired != held.desired;
                if changed {
                    held.desired = desired;
                }
                changed
            }
            None => {
                self.pods.insert(k, Held { desired });
                true
            }
        }
    }

    /// Applies one change; whether the desired set changed.
    pub fn apply(&mut self, e: &WatchEvent<Arc<Pod>>) -> bool {
        match e {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => self.put(p),
            WatchEvent::Deleted(p) => self.pods.remove(&key(p)).is_some(),
            WatchEvent::Bookmark(_) => false,
        }
    }

    /// A pod deleted at once (grace 0, `--force`): its last state, marked deleted, replaces
    /// the one held, so the snapshot sent before it goes tells the pod workers to stop it
    /// now rather than with its own grace period. Whether there was such a pod.
    pub fn tombstone(&mut self, gone: &Arc<Pod>) -> bool {
        if gone.metadata.deletion_timestamp.is_none() {
            return false;
        }
        let Some(p) = desired(gone) else { return false };
        match self.pods.get_mut(&key(gone)) {
            Some(held) if held.desired.uid() == p.uid() => {
                held.desired = p;
                true
            }
            _ => false,
        }
    }

    pub fn snapshot(&self) -> Vec<SharedPod> {
        self.pods.values().map(|h| h.desired.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_core::PodExt;
    use serde_json::json;

    fn pod(uid: &str, deleted: bool) -> Arc<Pod> {
        let mut v = json!({"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 60,
                     "containers": [{"name": "c", "image": "busybox"}]}});
        if deleted {
            v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            v["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn modified(p: Pod) -> WatchEvent<Arc<Pod>> {
        WatchEvent::Modified(Arc::new(p))
    }

    #[test]
    fn a_status_written_back_is_no_change_but_a_terminal_phase_is_kept_for_later() {
        let mut set = PodSet::default();
        let first = pod("u1", false);
        assert!(set.apply(&WatchEvent::Added(first.clone())));
        let mut written = (*first).clone();
        written.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..PodStatus::default()
        });
        written.metadata.resource_version = Some("6".into());
        assert!(!set.apply(&modified(written.clone())));
        assert!(
            set.snapshot()[0].status.is_none(),
            "the status is the agent's"
        );
        let mut relabelled = written.clone();
        relabelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
        assert!(set.apply(&modified(relabelled.clone())));
        let phase = set.snapshot()[0].status.clone().and_then(|s| s.phase);
        assert_eq!(
            phase.as_deref(),
            Some("Succeeded"),
            "a finished pod stays finished"
        );
        let mut running = relabelled;
        running.status.as_mut().unwrap().phase = Some("Running".into());
        running.metadata.labels = None;
        assert!(set.apply(&modified(running)));
        assert!(
            set.snapshot()[0].status.is_none(),
            "only a terminal phase is kept"
        );
    }

    #[test]
    fn a_readiness_gate_s_condition_is_a_change_and_reaches_the_kubelet() {
        use k8s_openapi::api::core::v1::PodReadinessGate;
        let mut set = PodSet::default();
        let mut gated = (*pod("u1", false)).clone();
        gated.spec.as_mut().unwrap().readiness_gates = Some(vec![PodReadinessGate {
            condition_type: "example.com/lb".into(),
        }]);
        assert!(set.apply(&WatchEvent::Added(Arc::new(gated.clone()))));
        let condition = |t: &str, v: &str| PodCondition {
            type_: t.into(),
            status: v.into(),
            ..Default::default()
        };
        // The node's own conditions are no change; the gate's is.
        gated.status = Some(PodStatus {
            conditions: Some(vec![condition("Ready", "False")]),
            ..PodStatus::default()
        });
        assert!(!set.apply(&modified(gated.clone())));
        let conditions = gated.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conditions.push(condition("example.com/lb", "True"));
        assert!(set.apply(&modified(gated)));
        let given = set.snapshot()[0].status.clone().and_then(|s| s.conditions);
        assert_eq!(given, Some(vec![condition("example.com/lb", "True")]));
    }

    #[test]
    fn a_change_the_kubelet_s_pod_does_not_show_keeps_the_copy_it_was_given() {
        let mut set = PodSet::default();
        let first = pod("u1", false);
        assert!(set.apply(&WatchEvent::Added(first.clone())));
        let given = set.snapshot()[0].clone();
        // The source's own annotation, as a write through the API can add it: the desired
        // pod carries it already, so nothing the kubelet runs changed.
        let mut annotated = (*first).clone();
        annotated.metadata.annotations =
            Some([(CONFIG_SOURCE_ANNOTATION.to_string(), SOURCE.to_string())].into());
        assert!(!set.apply(&modified(annotated)));
        assert!(
            Arc::ptr_eq(set.snapshot()[0].arc(), given.arc()),
            "the copy given before is kept"
        );
    }

    #[test]
    fn the_api_s_object_is_not_kept_and_an_annotation_of_its_own_is_a_change() {
        let mut set = PodSet::default();
        let first = pod("u1", false);
        assert!(set.apply(&WatchEvent::Added(first.clone())));
        let mut running = (*first).clone();
        running.status = Some(PodStatus {
            phase: Some("Running".into()),
            ..PodStatus::default()
        });
        let running = Arc::new(running);
        assert!(!set.apply(&WatchEvent::Modified(running.clone())));
        assert_eq!(
            (Arc::strong_count(&first), Arc::strong_count(&running)),
            (1, 1),
            "the watch's decoded objects are let go"
        );
        let mut annotated = (*running).clone();
        annotated.metadata.annotations = Some([("team".to_string(), "a".to_string())].into());
        assert!(set.apply(&modified(annotated.clone())));
        assert!(!set.apply(&modified(annotated.clone())), "seen already");
        annotated.metadata.annotations = None;
        assert!(set.apply(&modified(annotated)), "an annotation removed");
        let given = set.snapshot();
        let source = given[0].metadata.annotations.as_ref().unwrap();
        assert_eq!(
            source.keys().collect::<Vec<_>>(),
            [CONFIG_SOURCE_ANNOTATION]
        );
    }

    #[test]
    fn a_relist_keeps_the_copies_of_pods_it_shows_unchanged_and_drops_the_rest() {
        let mut set = PodSet::default();
        let (one, two) = (pod("u1", false), pod("u2", false));
        let mut two = (*two).clone();
        two.metadata.name = Some("q".into());
        let two = Arc::new(two);
        set.reset(&[one.clone(), two.clone()]);
        let given = set.snapshot();
        // Listed again (a watch too old to resume): the same objects, decoded anew.
        let again = Arc::new((*one).clone());
        set.reset(std::slice::from_ref(&again));
        let now = set.snapshot();
        assert_eq!(now.len(), 1, "a pod the list no longer has is gone");
        assert!(
            Arc::ptr_eq(now[0].arc(), given[0].arc()),
            "the copy given before is kept"
        );
    }

    #[test]
    fn a_forced_delete_is_seen_marked_before_the_pod_goes() {
        let mut set = PodSet::default();
        assert!(set.apply(&WatchEvent::Added(pod("u1", false))));
        let gone = pod("u1", true);
        assert!(set.tombstone(&gone));
        let marked = set.snapshot();
        assert_eq!(marked.len(), 1);
        assert_eq!(marked[0].metadata.deletion_grace_period_seconds, Some(0));
        assert!(marked[0].deletion_grace_period().is_some());
        assert!(set.apply(&WatchEvent::Deleted(gone)));
        assert!(set.is_empty());
        assert!(
            !set.tombstone(&pod("u2", true)),
            "another incarnation's deletion marks nothing"
        );
    }
}
