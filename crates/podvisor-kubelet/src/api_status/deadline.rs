//! `activeDeadlineSeconds`, as the kubelet's active deadline handler enforces it: a pod
//! active on the node longer than its deadline is Failed with `DeadlineExceeded`, and its
//! containers are stopped. The pod is active since its first sandbox was made (the
//! runtime's record, so an agent restart neither forgets nor restarts the count).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podvisor_cri::PodStatus;

pub(crate) const REASON: &str = "DeadlineExceeded";
pub(crate) const MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// How long before the pod's deadline, at `now` (nanoseconds); `None` without a deadline or
/// before the pod has a sandbox; zero once it passed.
pub(crate) fn left(pod: &Pod, rt: &PodStatus, now: i64) -> Option<Duration> {
    let seconds = pod.spec.as_ref()?.active_deadline_seconds?;
    let started = rt.sandboxes.iter().map(|s| s.created_at).min()?;
    let deadline = started.saturating_add(seconds.saturating_mul(1_000_000_000));
    let nanos = u64::try_from(deadline.saturating_sub(now)).unwrap_or(0);
    Some(Duration::from_nanos(nanos))
}

/// The sooner of two rechecks.
pub(crate) fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) fn exceeded(pod: &Pod, rt: &PodStatus, now: i64) -> bool {
    left(pod, rt, now).is_some_and(|l| l.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_cri::{SandboxState, SandboxStatus};

    fn sandbox(created_at: i64) -> SandboxStatus {
        SandboxStatus {
            id: "s".into(),
            pod: Default::default(),
            attempt: 0,
            state: SandboxState::Ready,
            created_at,
            ip: None,
            additional_ips: vec![],
            host_network: false,
            labels: Default::default(),
            annotations: Default::default(),
        }
    }

    #[test]
    fn counted_from_the_first_sandbox() {
        let mut pod = Pod {
            spec: Some(Default::default()),
            ..Default::default()
        };
        let s = 1_000_000_000;
        let rt = PodStatus {
            sandboxes: vec![sandbox(50 * s), sandbox(10 * s)],
            ..Default::default()
        };
        assert_eq!(left(&pod, &rt, 20 * s), None, "no deadline");
        pod.spec.as_mut().unwrap().active_deadline_seconds = Some(30);
        assert_eq!(left(&pod, &rt, 20 * s), Some(Duration::from_secs(20)));
        assert!(!exceeded(&pod, &rt, 39 * s));
        assert!(exceeded(&pod, &rt, 40 * s));
        assert_eq!(
            left(&pod, &PodStatus::default(), 100 * s),
            None,
            "no sandbox yet"
        );
    }
}
