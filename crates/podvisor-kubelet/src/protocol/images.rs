//! The syncer asks the image manager to make an image present before creating a container.

use actix::Message;
use podvisor_core::PodUid;
use podvisor_cri::RegistryAuth;

use super::status::WaitingReason;

/// Ensures `image` is present for the pod `pod`; answers the image reference to create
/// containers from. A pull tries `credentials` in order (none: an anonymous pull).
#[derive(Message)]
#[rtype(result = "Result<String, ImageError>")]
pub struct EnsureImage {
    pub pod: PodUid,
    pub image: String,
    pub policy: PullPolicy,
    pub credentials: Vec<RegistryAuth>,
}

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
    pub reason: WaitingReason,
    pub message: String,
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
