//! In-place resize: a container's CPU and memory changed while it runs.

use super::CriClient;
use crate::error::CriError;
use crate::proto::{LinuxContainerResources, UpdateContainerResourcesRequest};

impl CriClient {
    pub async fn update_container_resources(
        &self,
        id: &str,
        linux: LinuxContainerResources,
    ) -> Result<(), CriError> {
        let (container_id, linux) = (id.to_string(), Some(linux));
        let req = UpdateContainerResourcesRequest {
            container_id,
            linux,
            ..Default::default()
        };
        self.unary(
            "UpdateContainerResources",
            self.timeouts.call,
            call!(self.runtime, update_container_resources, req),
        )
        .await
        .map(drop)
    }
}
