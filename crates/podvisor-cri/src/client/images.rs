//! The image service's calls.

use super::CriClient;
use crate::error::CriError;
use crate::proto::*;

impl CriClient {
    pub async fn image_status(&self, image: &str) -> Result<Option<Image>, CriError> {
        let req = ImageStatusRequest {
            image: Some(ImageSpec {
                image: image.to_string(),
                ..Default::default()
            }),
            verbose: false,
        };
        self.unary(
            "ImageStatus",
            self.timeouts.call,
            call!(self.images, image_status, req),
        )
        .await
        .map(|r| r.image)
    }

    pub async fn list_images(&self) -> Result<Vec<Image>, CriError> {
        self.unary(
            "ListImages",
            self.timeouts.call,
            call!(self.images, list_images, ListImagesRequest { filter: None }),
        )
        .await
        .map(|r| r.images)
    }

    pub async fn pull_image(
        &self,
        image: &str,
        auth: Option<AuthConfig>,
        sandbox_config: Option<PodSandboxConfig>,
    ) -> Result<String, CriError> {
        let req = PullImageRequest {
            image: Some(ImageSpec {
                image: image.to_string(),
                ..Default::default()
            }),
            auth,
            sandbox_config,
        };
        self.unary(
            "PullImage",
            self.timeouts.image_pull,
            call!(self.images, pull_image, req),
        )
        .await
        .map(|r| r.image_ref)
    }
}
