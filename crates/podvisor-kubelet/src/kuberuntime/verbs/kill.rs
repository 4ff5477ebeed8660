//! Stopping a pod's containers (each with the grace period: the runtime sends SIGTERM, then
//! SIGKILL at the deadline), then its sandboxes.

use futures_util::future::join_all;
use podvisor_core::{GracePeriod, SharedPod};
use podvisor_cri::{ContainerState, PodStatus, SandboxState};

use super::super::syncer::CriSyncer;
use crate::protocol::status::EventType;
use crate::protocol::sync::SyncError;

/// What of a pod still runs: its running (or created) containers as (id, name), and its
/// ready sandboxes.
pub(crate) fn running_of(status: &PodStatus) -> (Vec<(String, String)>, Vec<String>) {
    (
        status
            .containers
            .iter()
            .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Created))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect(),
        status
            .sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .map(|s| s.id.clone())
            .collect(),
    )
}

/// The same, from the runtime's listing of a pod known only from the runtime.
pub(crate) fn running_of_listing(pod: &podvisor_cri::Pod) -> (Vec<(String, String)>, Vec<String>) {
    (
        pod.containers
            .iter()
            .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Created))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect(),
        pod.sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .map(|s| s.id.clone())
            .collect(),
    )
}

impl CriSyncer {
    /// Stops the containers (concurrently, each with `grace`), then the sandboxes. What is
    /// gone already counts as stopped.
    pub(crate) async fn kill(
        &self,
        pod: &SharedPod,
        containers: &[(String, String)],
        sandboxes: &[String],
        grace: GracePeriod,
    ) -> Result<(), SyncError> {
        for (_, name) in containers {
            self.event(
                pod,
                EventType::Normal,
                "Killing",
                format!("Stopping container {name}"),
            );
        }
        let stops = join_all(
            containers
                .iter()
                .map(|(id, _)| self.runtime.stop_container(id, grace.as_duration())),
        )
        .await;
        for r in stops {
            match r {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        for id in sandboxes {
            match self.runtime.stop_sandbox(id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }
}
