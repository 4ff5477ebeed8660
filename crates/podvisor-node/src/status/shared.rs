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
pub struct SharedStatuses(Arc<Mutex<HashMap<PodUid, Weak<PodStatus>>>>);

impl SharedStatuses {
    /// `status` is pod `uid`'s newest.
    pub(crate) fn publish(&self, uid: &PodUid, status: &Arc<PodStatus>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(uid.clone(), Arc::downgrade(status));
    }

    /// Pod `uid` is gone.
    pub(crate) fn forget(&self, uid: &str) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.remove(uid);
    }

    /// Pod `uid`'s published status when it is still kept and equals `status`.
    pub(crate) fn same(&self, uid: &str, status: &PodStatus) -> Option<Arc<PodStatus>> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let published = map.get(uid)?.upgrade()?;
        (*published == *status).then_some(published)
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
}
