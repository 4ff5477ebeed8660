//! The image manager actor: makes sure a container's image is present, following its pull
//! policy, and backs off from images that fail to pull, so a pod with a bad image shows
//! `ErrImagePull`, then `ImagePullBackOff`, and never hammers a registry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_cri::Runtime;
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

// ---- messages ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

impl PullPolicy {
    /// The container's policy, or the API's default: `Always` for `:latest` or an untagged
    /// image, `IfNotPresent` otherwise.
    pub fn of(image: &str, declared: Option<&str>) -> Self {
        match declared {
            Some("Always") => Self::Always,
            Some("Never") => Self::Never,
            Some("IfNotPresent") => Self::IfNotPresent,
            _ => {
                let last = image.rsplit('/').next().unwrap_or(image);
                let tagged = last.contains(':') || image.contains('@');
                if !tagged || last.ends_with(":latest") {
                    Self::Always
                } else {
                    Self::IfNotPresent
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct ImageError {
    /// `ErrImagePull`, `ImagePullBackOff` or `ErrImageNeverPull`, as the kubelet says.
    pub reason: &'static str,
    pub message: String,
}

/// Ensures `image` is present; answers the image reference to create containers from.
#[derive(Message)]
#[rtype(result = "Result<String, ImageError>")]
pub struct EnsureImage {
    pub image: String,
    pub policy: PullPolicy,
}

// ---- actor ---------------------------------------------------------------------------------

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

impl Handler<EnsureImage> for ImageManager {
    type Result = ResponseActFuture<Self, Result<String, ImageError>>;

    fn handle(&mut self, msg: EnsureImage, _: &mut Context<Self>) -> Self::Result {
        let runtime = self.runtime.clone();
        let image = msg.image.clone();
        let in_backoff = self
            .backoff
            .get(&msg.image)
            .is_some_and(|(_, until)| Instant::now() < *until);
        let policy = msg.policy;
        Box::pin(
            async move {
                if policy != PullPolicy::Always {
                    match runtime.image_status(&image).await {
                        Ok(Some(found)) => return Ok(Ok(found.id)),
                        Ok(None) if policy == PullPolicy::Never => {
                            return Ok(Err(ImageError {
                                reason: "ErrImageNeverPull",
                                message: format!(
                                    "image {image:?} is not present and the pull policy is Never"
                                ),
                            }));
                        }
                        Ok(None) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                if in_backoff {
                    return Ok(Err(ImageError {
                        reason: "ImagePullBackOff",
                        message: format!("Back-off pulling image {image:?}"),
                    }));
                }
                info!(%image, "pulling image");
                Err(match runtime.pull_image(&image, None).await {
                    Ok(reference) => return Ok(Ok(reference)),
                    Err(e) => e.to_string(),
                })
            }
            .into_actor(self)
            .map(move |outcome, act, _| match outcome {
                Ok(Ok(reference)) => {
                    act.backoff.remove(&msg.image);
                    Ok(reference)
                }
                Ok(Err(e)) => Err(e),
                Err(why) => {
                    let entry = act
                        .backoff
                        .entry(msg.image.clone())
                        .or_insert((0, Instant::now()));
                    entry.0 += 1;
                    let wait = BACKOFF_INITIAL
                        .saturating_mul(1u32.checked_shl(entry.0 - 1).unwrap_or(u32::MAX))
                        .min(BACKOFF_MAX);
                    entry.1 = Instant::now() + wait;
                    warn!(image = %msg.image, error = %why, backoff = ?wait, "image pull failed");
                    Err(ImageError {
                        reason: "ErrImagePull",
                        message: why,
                    })
                }
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_pull_policies_follow_the_tag() {
        assert_eq!(PullPolicy::of("busybox", None), PullPolicy::Always);
        assert_eq!(PullPolicy::of("busybox:latest", None), PullPolicy::Always);
        assert_eq!(
            PullPolicy::of("localhost:5000/app", None),
            PullPolicy::Always
        );
        assert_eq!(
            PullPolicy::of("localhost/podvisor/busybox:test", None),
            PullPolicy::IfNotPresent
        );
        assert_eq!(
            PullPolicy::of("app@sha256:abc", None),
            PullPolicy::IfNotPresent
        );
        assert_eq!(
            PullPolicy::of("busybox:latest", Some("Never")),
            PullPolicy::Never
        );
    }
}
