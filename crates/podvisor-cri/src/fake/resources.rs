//! The fake's UpdateContainerResources: what a resize changes of a container.

use super::state::State;
use crate::error::CriError;
use crate::model::{ContainerResources, ContainerState};
use crate::proto::LinuxContainerResources;

impl State {
    /// UpdateContainerResources: a created or running container takes the new resources.
    pub fn update_resources(
        &mut self,
        id: &str,
        r: &LinuxContainerResources,
    ) -> Result<(), CriError> {
        let op = "UpdateContainerResources";
        let c = self
            .containers
            .get_mut(id)
            .ok_or_else(|| CriError::not_found(op, format!("container {id}")))?;
        if !matches!(
            c.status.state,
            ContainerState::Created | ContainerState::Running
        ) {
            return Err(CriError::failed(
                op,
                format!("container {id} is not running"),
            ));
        }
        c.status.resources = Some(applied(r));
        Ok(())
    }
}

/// What a runtime reports of the resources it applied.
pub(super) fn applied(r: &LinuxContainerResources) -> ContainerResources {
    ContainerResources {
        cpu_shares: r.cpu_shares,
        cpu_quota: r.cpu_quota,
        cpu_period: r.cpu_period,
        memory_limit: r.memory_limit_in_bytes,
    }
}
