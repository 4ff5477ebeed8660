//! The image service's calls.

use super::CriClient;
use crate::error::CriError;
use crate::proto::*;

/// A container's images only: a view of `Container` (same field numbers).
#[derive(Clone, PartialEq, prost::Message)]
struct ContainerImages {
    #[prost(message, optional, tag = "4")]
    image: Option<ImageSpec>,
    #[prost(string, tag = "5")]
    image_ref: String,
    #[prost(string, tag = "10")]
    image_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ImagesListing {
    #[prost(message, repeated, tag = "1")]
    containers: Vec<ContainerImages>,
}

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

    /// Every image any container of the runtime uses, in any state: as the container
    /// names it, by reference and by id (one ListContainers, decoding the images alone).
    pub async fn images_in_use(&self) -> Result<Vec<String>, CriError> {
        let listing = self
            .unary(
                "ListContainers",
                self.timeouts.call,
                Box::pin(super::listing::call_as::<_, ImagesListing>(
                    self.channel.clone(),
                    "/runtime.v1.RuntimeService/ListContainers",
                    ListContainersRequest { filter: None },
                )),
            )
            .await?;
        Ok(listing
            .containers
            .into_iter()
            .flat_map(|c| {
                [
                    c.image.map(|i| i.image).unwrap_or_default(),
                    c.image_ref,
                    c.image_id,
                ]
            })
            .filter(|s| !s.is_empty())
            .collect())
    }

    pub async fn remove_image(&self, image: &str) -> Result<(), CriError> {
        let req = RemoveImageRequest {
            image: Some(ImageSpec {
                image: image.to_string(),
                ..Default::default()
            }),
        };
        self.unary(
            "RemoveImage",
            self.timeouts.call,
            call!(self.images, remove_image, req),
        )
        .await
        .map(|_| ())
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
