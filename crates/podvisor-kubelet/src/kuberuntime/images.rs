//! The image manager actor: makes sure a container's image is present, following its pull
//! policy, and backs off from images that fail to pull, so a pod with a bad image shows
//! `ErrImagePull`, then `ImagePullBackOff`, and never hammers a registry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_core::PodUid;
use podvisor_cri::{CriError, RegistryAuth, Runtime};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::protocol::images::{EnsureImage, ImageError, PullPolicy};
use crate::protocol::status::WaitingReason;

const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// A pod's pull of one image: backoff is the pod's, as the kubelet keys it (another pod
/// may hold the credentials this one lacks).
type PullKey = (PodUid, String);

pub struct ImageManager {
    runtime: Arc<dyn Runtime>,
    /// Pulls that failed last: how many times in a row, and until when not to try.
    backoff: HashMap<PullKey, (u32, Instant)>,
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
    (image, credentials): (String, Vec<RegistryAuth>),
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
    info!(%image, credentials = credentials.len(), "pulling image");
    match pull(&*runtime, &image, &credentials).await {
        Ok(reference) => Outcome::Present(reference),
        Err(e) => Outcome::Failed(e),
    }
}

/// A pull with each of `credentials` in turn until one works (the kubelet's order), or
/// anonymously when there are none; the last error when none works.
async fn pull(
    runtime: &dyn Runtime,
    image: &str,
    credentials: &[RegistryAuth],
) -> Result<String, CriError> {
    let Some((last, first)) = credentials.split_last() else {
        return runtime.pull_image(image, None, None).await;
    };
    for (n, auth) in first.iter().enumerate() {
        match runtime.pull_image(image, Some(auth), None).await {
            Ok(reference) => return Ok(reference),
            Err(e) => {
                warn!(%image, credentials = n, error = %e, "pull with these credentials failed")
            }
        }
    }
    runtime.pull_image(image, Some(last), None).await
}

impl ImageManager {
    /// Backs off from an image whose pull failed: 10 s doubling to 5 min.
    fn failed(&mut self, key: PullKey, error: &CriError) {
        let image = key.1.clone();
        let entry = self.backoff.entry(key).or_insert((0, Instant::now()));
        entry.0 += 1;
        let wait = BACKOFF_INITIAL
            .saturating_mul(1u32.checked_shl(entry.0 - 1).unwrap_or(u32::MAX))
            .min(BACKOFF_MAX);
        entry.1 = Instant::now() + wait;
        warn!(%image, %error, backoff = ?wait, "image pull failed");
    }
}

impl ImageManager {
    fn in_backoff(&self, key: &PullKey) -> bool {
        let until = self.backoff.get(key).map(|(_, until)| *until);
        until.is_some_and(|until| Instant::now() < until)
    }
}

impl Handler<EnsureImage> for ImageManager {
    type Result = ResponseActFuture<Self, Result<String, ImageError>>;

    fn handle(&mut self, msg: EnsureImage, _: &mut Context<Self>) -> Self::Result {
        let key = (msg.pod.clone(), msg.image.clone());
        let in_backoff = self.in_backoff(&key);
        let work = ensure(
            self.runtime.clone(),
            (msg.image, msg.credentials),
            msg.policy,
            in_backoff,
        );
        Box::pin(
            work.into_actor(self)
                .map(move |outcome, act, _| match outcome {
                    Outcome::Present(reference) => {
                        act.backoff.remove(&key);
                        Ok(reference)
                    }
                    Outcome::Refused(e) => Err(e),
                    Outcome::Failed(error) => {
                        act.failed(key, &error);
                        Err(ImageError {
                            reason: WaitingReason::ErrImagePull,
                            message: error.to_string(),
                        })
                    }
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use podvisor_cri::FakeRuntime;

    use super::*;

    fn login(user: &str) -> RegistryAuth {
        RegistryAuth {
            username: user.into(),
            password: "pw".into(),
            server_address: "localhost:5000".into(),
            ..RegistryAuth::default()
        }
    }

    const IMAGE: &str = "localhost:5000/private/app:1";

    #[tokio::test]
    async fn credentials_are_tried_in_order_until_one_pulls() {
        let rt = FakeRuntime::new();
        rt.allow_pull_as(IMAGE, "right");
        let tried = [login("wrong"), login("right")];
        assert!(pull(&rt, IMAGE, &tried).await.is_ok());
        let e = pull(&rt, IMAGE, &[login("wrong")]).await.unwrap_err();
        assert!(e.to_string().contains("401"), "{e}");
        assert!(pull(&rt, IMAGE, &[]).await.is_err(), "anonymous");
    }

    #[test]
    fn one_pod_s_failed_pull_does_not_hold_back_another_s() {
        let rt = FakeRuntime::new();
        let mut m = ImageManager::new(Arc::new(rt));
        let (a, b) = (PodUid::from("a"), PodUid::from("b"));
        let error = CriError::failed("PullImage", "401 Unauthorized");
        m.failed((a.clone(), IMAGE.into()), &error);
        assert!(m.in_backoff(&(a, IMAGE.into())));
        assert!(!m.in_backoff(&(b, IMAGE.into())));
    }
}
