//! The fake's listing: what a CRI listing shows of its sandboxes and containers, reduced
//! as the CRI runtime's views reduce it (`client/listing.rs`).

use super::state::State;
use crate::labels;
use crate::model::*;

impl State {
    pub fn list_pods(&self) -> Vec<Pod> {
        let managed_by = |l: &crate::Labels| l.get(labels::MANAGED_BY).cloned();
        let sandboxes = self
            .sandboxes
            .values()
            .map(|s| Sandbox {
                id: s.status.id.clone(),
                pod: s.status.pod.clone(),
                attempt: s.status.attempt,
                state: s.status.state,
                created_at: s.status.created_at,
                managed_by: managed_by(&s.status.labels),
            })
            .collect();
        let containers = self
            .containers
            .values()
            .map(|c| {
                let l = &c.status.labels;
                let get = |k: &str| l.get(k).cloned().unwrap_or_default();
                Container {
                    id: c.status.id.clone(),
                    sandbox_id: c.sandbox_id.clone(),
                    name: c.status.name.clone(),
                    attempt: c.status.attempt,
                    state: c.status.state,
                    created_at: c.status.created_at,
                    managed_by: managed_by(l),
                    grace_period: c
                        .status
                        .annotations
                        .get(labels::GRACE_PERIOD)
                        .and_then(|g| g.parse().ok()),
                    labelled_pod: (!self.sandboxes.contains_key(&c.sandbox_id)).then(|| PodRef {
                        uid: get(labels::POD_UID),
                        name: get(labels::POD_NAME),
                        namespace: get(labels::POD_NAMESPACE),
                    }),
                }
            })
            .collect();
        group_pods(sandboxes, containers)
    }
}
