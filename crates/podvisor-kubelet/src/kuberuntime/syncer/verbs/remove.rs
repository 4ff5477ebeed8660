//! Removing everything the runtime holds of a pod: its containers, then its sandboxes
//! (and an orphan's cgroup after them).

use podvisor_core::PodUid;
use podvisor_cri::PodStatus;

use super::super::CriSyncer;
use crate::protocol::sync::SyncError;

impl CriSyncer {
    /// Removes an orphan: what the runtime holds of pod `uid`, then its cgroup (whatever
    /// its class: no spec says).
    pub(crate) async fn remove_all(&self, uid: &PodUid) -> Result<(), SyncError> {
        let fresh = self.runtime.pod_status(uid.as_str()).await?;
        self.remove_listed(&fresh).await?;
        for e in self.node.pod_cgroups.iter().flat_map(|c| c.remove_uid(uid)) {
            tracing::warn!(pod_uid = %uid, error = %e, "the orphan's cgroup stays");
        }
        Ok(())
    }

    /// Removes every container and sandbox of `status`.
    pub(crate) async fn remove_listed(&self, status: &PodStatus) -> Result<(), SyncError> {
        for c in &status.containers {
            match self.runtime.remove_container(&c.id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        for s in &status.sandboxes {
            match self.runtime.remove_sandbox(&s.id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }
}
