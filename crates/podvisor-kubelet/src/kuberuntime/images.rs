//! The image manager actor: makes sure a container's image is present, following its pull
//! policy, and backs off from images that fail to pull, so a pod with a bad image shows
//! `ErrImagePull`, then `ImagePullBackOff`, and never hammers a registry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_cri::{CriError, Runtime};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::protocol::images::{EnsureImage, ImageError, PullPolicy};
use crate::protocol::status::WaitingReason;

const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

pub struct ImageManager {
    runtime: Arc<dyn Runtime>,
    /// Images whose last pull failed: how many times in a row, and until when not to try.
    backoff: HashMap<String, (u32, Instant)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageManagerSummary {
    pub backing_off: usize,
}

impl ImageManager {
    pub fn new(runtime: Arc<dyn Runtime>) -> Self {
        Self {
            runtime,
            backoff: HashMap::new(),
        }
    }
}

impl Actor for ImageManager {
    type Context = Context<Self>;
}

impl SupervisedActor for ImageManager {
    const KIND: &'static str = "image-manager";
    type Summary = ImageManagerSummary;

    /// Nothing to rebuild: the runtime knows which images are present, and a forgotten
    /// backoff only means one early retry.
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}

    fn summary(&self) -> ImageManagerSummary {
        ImageManagerSummary {
            backing_off: self.backoff.len(),
        }
    }
}

/// How looking for (and perhaps pulling) an image went.
enum Outcome {
    Present(String),
    Refused(ImageError),
    /// The runtime failed: backed off.
    Failed(CriError),
}

async fn ensure(
    runtime: Arc<dyn Runtime>,
    image: String,
    policy: PullPolicy,
    in_backoff: bool,
) -> Outcome {
    if policy != PullPolicy::Always {
        match runtime.image_status(&image).await {
            Ok(Some(found)) => return Outcome::Present(found.id),
            Ok(None) if policy == PullPolicy::Never => {
                return Outcome::Refused(ImageError {
                    reason: WaitingReason::ErrImageNeverPull,
                    message: format!("image {image:?} is not present and the pull policy is Never"),
                });
            }
            Ok(None) => {}
            Err(e) => return Outcome::Failed(e),
        }
    }
    if in_backoff {
        return Outcome::Refused(ImageError {
            reason: WaitingReason::ImagePullBackOff,
            message: format!("Back-off pulling image {image:?}"),
        });
    }
    info!(%image, "pulling image");
    match runtime.pull_image(&image, None).await {
        Ok(reference) => Outcome::Present(reference),
        Err(e) => Outcome::Failed(e),
    }
}

impl ImageManager {
    /// Backs off from an image whose pull failed: 10 s doubling to 5 min.
    fn failed(&mut self, image: &str, error: &CriError) {
        let entry = self
            .backoff
            .entry(image.to_string())
            .or_insert((0, Instant::now()));
        entry.0 += 1;
        let wait = BACKOFF_INITIAL
            .saturating_mul(1u32.checked_shl(entry.0 - 1).unwrap_or(u32::MAX))
            .min(BACKOFF_MAX);
        entry.1 = Instant::now() + wait;
        warn!(%image, %error, backoff = ?wait, "image pull failed");
    }
}

impl Handler<EnsureImage> for ImageManager {
    type Result = ResponseActFuture<Self, Result<String, ImageError>>;

    fn handle(&mut self, msg: EnsureImage, _: &mut Context<Self>) -> Self::Result {
        let in_backoff = self
            .backoff
            .get(&msg.image)
            .is_some_and(|(_, until)| Instant::now() < *until);
        let work = ensure(
            self.runtime.clone(),
            msg.image.clone(),
            msg.policy,
            in_backoff,
        );
        Box::pin(
            work.into_actor(self)
                .map(move |outcome, act, _| match outcome {
                    Outcome::Present(reference) => {
                        act.backoff.remove(&msg.image);
                        Ok(reference)
                    }
                    Outcome::Refused(e) => Err(e),
                    Outcome::Failed(error) => {
                        act.failed(&msg.image, &error);
                        Err(ImageError {
                            reason: WaitingReason::ErrImagePull,
                            message: error.to_string(),
                        })
                    }
                }),
        )
    }
}
