//! The pods the API source wants, as a plain struct: fed watch events, it answers whether
//! the desired set changed and gives the snapshot the sync loop takes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::SharedPod;
use podvisor_core::pod::CONFIG_SOURCE_ANNOTATION;
use podvisor_store::{ChangeType, StoredObject};
use tracing::warn;

use crate::{MIRROR_ANNOTATION, SOURCE};

#[derive(Default)]
pub struct PodSet {
    pods: BTreeMap<(String, String), SharedPod>,
    /// The newest revision seen: a watch resumes after it.
    pub revision: u64,
}

/// The pod as the kubelet takes it, or `None` for what it must not run (a mirror pod, an
/// object it cannot read). Without what changes on every status write (the status, which
/// is the agent's own, and the resourceVersion): a status written back is no change to the
/// desired pod, so it neither sends a snapshot nor syncs the pod again.
fn desired(o: &StoredObject) -> Option<SharedPod> {
    let mut pod: Pod = o.typed()?;
    pod.status = None;
    pod.metadata.resource_version = None;
    pod.metadata.managed_fields = None;
    let ann = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    if ann.contains_key(MIRROR_ANNOTATION) {
        return None;
    }
    ann.insert(CONFIG_SOURCE_ANNOTATION.into(), SOURCE.into());
    match SharedPod::new(pod) {
        Ok(p) => Some(p),
        Err(e) => {
            warn!(pod = %o.name, error = %e, "stored pod not used");
            None
        }
    }
}

impl PodSet {
    /// Replaces everything with a full list.
    pub fn reset(&mut self, items: &[std::sync::Arc<StoredObject>], revision: u64) {
        self.pods.clear();
        for o in items {
            if let Some(p) = desired(o) {
                self.pods.insert((o.namespace.clone(), o.name.clone()), p);
            }
        }
        self.revision = revision;
    }

    /// Applies one change; whether the desired set changed.
    pub fn apply(&mut self, kind: ChangeType, o: &StoredObject, revision: u64) -> bool {
        self.revision = self.revision.max(revision);
        let key = (o.namespace.clone(), o.name.clone());
        let next = match kind {
            ChangeType::Deleted => None,
            _ => desired(o),
        };
        match next {
            Some(p) => match self.pods.insert(key, p.clone()) {
                Some(old) => *old.arc() != *p.arc(),
                None => true,
            },
            None => self.pods.remove(&key).is_some(),
        }
    }

    /// A pod deleted at once (grace 0, `--force`): its last state, marked deleted, replaces
    /// the one held, so the snapshot sent before it goes tells the pod workers to stop it
    /// now rather than with its own grace period. Whether there was such a pod.
    pub fn tombstone(&mut self, o: &StoredObject) -> bool {
        let key = (o.namespace.clone(), o.name.clone());
        let Some(p) = desired(o).filter(|p| p.metadata.deletion_timestamp.is_some()) else {
            return false;
        };
        match self.pods.get_mut(&key) {
            Some(held) if held.uid() == p.uid() => {
                *held = p;
                true
            }
            _ => false,
        }
    }

    pub fn snapshot(&self) -> Vec<SharedPod> {
        self.pods.values().cloned().collect()
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
    use podvisor_core::{Kind, PodExt};
    use serde_json::json;

    fn stored(uid: &str, deleted: bool) -> StoredObject {
        let mut v = json!({"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 60,
                     "containers": [{"name": "c", "image": "busybox"}]}});
        if deleted {
            v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            v["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        }
        StoredObject::from_value(Kind::Pod, &v)
    }

    #[test]
    fn a_status_written_back_is_no_change() {
        let mut set = PodSet::default();
        let mut v: serde_json::Value = stored("u1", false).typed().unwrap();
        assert!(set.apply(
            ChangeType::Added,
            &StoredObject::from_value(Kind::Pod, &v),
            5
        ));
        v["status"] = json!({"phase": "Running"});
        v["metadata"]["resourceVersion"] = "6".into();
        let written = StoredObject::from_value(Kind::Pod, &v);
        assert!(!set.apply(ChangeType::Modified, &written, 6));
        v["metadata"]["labels"] = json!({"a": "b"});
        let relabelled = StoredObject::from_value(Kind::Pod, &v);
        assert!(set.apply(ChangeType::Modified, &relabelled, 7));
        assert_eq!(set.revision, 7);
    }

    #[test]
    fn a_forced_delete_is_seen_marked_before_the_pod_goes() {
        let mut set = PodSet::default();
        assert!(set.apply(ChangeType::Added, &stored("u1", false), 5));
        let gone = stored("u1", true);
        assert!(set.tombstone(&gone));
        let marked = set.snapshot();
        assert_eq!(marked.len(), 1);
        assert_eq!(marked[0].metadata.deletion_grace_period_seconds, Some(0));
        assert!(marked[0].deletion_grace_period().is_some());
        assert!(set.apply(ChangeType::Deleted, &gone, 6));
        assert!(set.is_empty());
        assert!(
            !set.tombstone(&stored("u2", true)),
            "another incarnation's deletion marks nothing"
        );
    }
}
