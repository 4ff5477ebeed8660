//! ListContainerStats: what each container uses, as the runtime measures it.

use super::CriClient;
use crate::error::CriError;
use crate::proto::*;

impl CriClient {
    pub async fn list_container_stats(
        &self,
        filter: Option<ContainerStatsFilter>,
    ) -> Result<Vec<ContainerStats>, CriError> {
        let req = ListContainerStatsRequest { filter };
        self.unary(
            "ListContainerStats",
            self.timeouts.call,
            call!(self.runtime, list_container_stats, req),
        )
        .await
        .map(|r| r.stats)
    }
}
