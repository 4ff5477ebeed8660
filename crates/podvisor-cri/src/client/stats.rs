//! ListContainerStats, ListPodSandboxStats and ImageFsInfo: what each container and each
//! pod uses, and what the images take, as the runtime measures them.

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

    /// The stats of the sandboxes `node`'s agent made.
    pub async fn list_pod_sandbox_stats(
        &self,
        node: &str,
    ) -> Result<Vec<PodSandboxStats>, CriError> {
        let selector = [(crate::labels::MANAGED_BY.to_string(), node.to_string())];
        let req = ListPodSandboxStatsRequest {
            filter: Some(PodSandboxStatsFilter {
                id: String::new(),
                label_selector: selector.into_iter().collect(),
            }),
        };
        self.unary(
            "ListPodSandboxStats",
            self.timeouts.call,
            call!(self.runtime, list_pod_sandbox_stats, req),
        )
        .await
        .map(|r| r.stats)
    }

    pub async fn image_fs_info(&self) -> Result<ImageFsInfoResponse, CriError> {
        self.unary(
            "ImageFsInfo",
            self.timeouts.call,
            call!(self.images, image_fs_info, ImageFsInfoRequest {}),
        )
        .await
    }

    /// The sandbox's process id, from the runtime's verbose status (`info.pid`, as
    /// containerd writes it); `None` when it does not say.
    pub async fn pod_sandbox_pid(&self, id: &str) -> Result<Option<u32>, CriError> {
        let resp = self.pod_sandbox_status_response(id, true).await?;
        let info = resp.info.get("info").map(String::as_str).unwrap_or("{}");
        let v: serde_json::Value = serde_json::from_str(info).unwrap_or_default();
        Ok(v["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0))
    }
}
