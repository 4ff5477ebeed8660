//! The statuses the status manager published, by pod, shared with the uplink without being
//! kept: the uplink decodes each of the node's statuses back from the store's watch, and
//! where it equals the one published it keeps that copy rather than its own (one status
//! of some 2.5 KB per pod fewer, 1.3 MB with 500 pods).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use k8s_openapi::api::core::v1::PodStatus;
use podvisor_core::PodUid;

/// Weak references: a status lives as long as its publisher or a sharer keeps it.
#[derive(Clone, Default)]
pub struct SharedStatuses(Arc<Mutex<Entries>>);

/// A pod removed while the status writer was down is never forgotten by name: entries
/// whose status nobody keeps are dropped whenever the map has doubled since the last such
/// sweep, so it stays within twice the live pods (plus a few) at a cost per publish that
/// does not grow with them.
#[derive(Default)]
struct Entries {
    by_pod: HashMap<PodUid, Weak<PodStatus>>,
    sweep_at: usize,
}

/// Fewest entries before a sweep.
const SWEEP_MIN: usize = 64;

impl SharedStatuses {
    /// `status` is pod `uid`'s newest.
    pub(crate) fn publish(&self, uid: &PodUid, status: &Arc<PodStatus>) {
        let mut e = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        e.by_pod.insert(uid.clone(), Arc::downgrade(status));
        if e.by_pod.len() >= e.sweep_at.max(SWEEP_MIN) {
            e.by_pod.retain(|_, s| s.strong_count() > 0);
            e.sweep_at = e.by_pod.len() * 2;
        }
    }

    /// Pod `uid` is gone.
    pub(crate) fn forget(&self, uid: &str) {
        let mut e = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        e.by_pod.remove(uid);
    }

    /// Pod `uid`'s published status when it is still kept and equals `status`.
    pub(crate) fn same(&self, uid: &str, status: &PodStatus) -> Option<Arc<PodStatus>> {
        let e = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let published = e.by_pod.get(uid)?.upgrade()?;
        (*published == *status).then_some(published)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap().by_pod.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: &str) -> Arc<PodStatus> {
        Arc::new(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        })
    }

    #[test]
    fn an_equal_status_is_the_published_copy_while_it_is_kept() {
        let shared = SharedStatuses::default();
        let uid = PodUid::from("u1");
        let running = status("Running");
        shared.publish(&uid, &running);

        let same = shared.same("u1", &status("Running")).expect("equal");
        assert!(
            Arc::ptr_eq(&same, &running),
            "the published Arc, not a copy"
        );
        assert!(shared.same("u1", &status("Pending")).is_none(), "not equal");
        assert!(
            shared.same("u2", &status("Running")).is_none(),
            "another pod"
        );

        shared.forget("u1");
        assert!(shared.same("u1", &status("Running")).is_none(), "gone");
        shared.publish(&uid, &running);
        drop((same, running));
        assert!(
            shared.same("u1", &status("Running")).is_none(),
            "no longer kept"
        );
    }

    #[test]
    fn entries_nobody_keeps_are_swept_while_kept_ones_stay() {
        let shared = SharedStatuses::default();
        let kept: Vec<Arc<PodStatus>> = (0..100).map(|_| status("Running")).collect();
        for (i, s) in kept.iter().enumerate() {
            shared.publish(&PodUid::from(format!("kept-{i}").as_str()), s);
        }
        // Ten thousand pods published once and gone without a `forget`.
        for i in 0..10_000 {
            shared.publish(
                &PodUid::from(format!("lost-{i}").as_str()),
                &status("Pending"),
            );
            assert!(
                shared.len() <= 2 * 101 + SWEEP_MIN,
                "{} entries",
                shared.len()
            );
        }
        for (i, k) in kept.iter().enumerate() {
            let same = shared.same(&format!("kept-{i}"), &status("Running"));
            assert!(same.is_some_and(|s| Arc::ptr_eq(&s, k)), "kept-{i}");
        }
    }
}
