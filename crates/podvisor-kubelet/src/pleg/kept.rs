//! What of a pod's runtime status the cache keeps. The runtime answers every sandbox and
//! container with its labels, and every sandbox with the pod's annotations: copies of the
//! pod's own, which nothing reads from a status (a pod's owner is read from listings, its
//! labels and annotations from the pod). With 500 pods those decoded strings were half of
//! what the cache held. The containers' annotations stay: their spec's hash, crash-loop
//! backoff, memory request and termination message path are read from them.

use podvisor_cri::PodStatus;

/// `status` without the labels and annotations nobody reads from the cache.
pub(super) fn kept(mut status: PodStatus) -> PodStatus {
    for s in &mut status.sandboxes {
        s.labels.clear();
        s.annotations.clear();
    }
    for c in &mut status.containers {
        c.labels.clear();
    }
    status
}

#[cfg(test)]
mod tests {
    use podvisor_cri::{ContainerState, ContainerStatus, PodRef, SandboxState, SandboxStatus};

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> podvisor_cri::Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_cache_keeps_the_containers_annotations_and_no_labels() {
        let pod = PodRef {
            uid: "u1".into(),
            name: "p".into(),
            namespace: "default".into(),
        };
        let sandbox = SandboxStatus {
            id: "s1".into(),
            pod,
            attempt: 0,
            state: SandboxState::Ready,
            created_at: 1,
            ip: Some("10.0.0.2".into()),
            additional_ips: vec![],
            host_network: false,
            labels: labels(&[("app", "web"), (podvisor_cri::labels::MANAGED_BY, "n1")]),
            annotations: labels(&[("kubernetes.io/config.source", "file")]),
        };
        let container = ContainerStatus {
            id: "c1".into(),
            sandbox_id: "s1".into(),
            name: "c".into(),
            attempt: 0,
            state: ContainerState::Running,
            created_at: 1,
            started_at: 2,
            finished_at: 0,
            exit_code: 0,
            image: "busybox".into(),
            image_ref: "sha256:1".into(),
            reason: String::new(),
            message: String::new(),
            labels: labels(&[(podvisor_cri::labels::CONTAINER_NAME, "c"), ("app", "web")]),
            annotations: labels(&[(
                podvisor_cri::labels::TERMINATION_LOG,
                "/dev/termination-log",
            )]),
            log_path: "c/0.log".into(),
            user: None,
            resources: None,
        };
        let status = PodStatus {
            sandboxes: vec![sandbox],
            containers: vec![container.clone()],
            ..Default::default()
        };
        let kept = kept(status);
        assert!(kept.sandboxes[0].labels.is_empty());
        assert!(kept.sandboxes[0].annotations.is_empty());
        assert!(kept.containers[0].labels.is_empty());
        assert_eq!(kept.containers[0].annotations, container.annotations);
        assert_eq!(kept.sandboxes[0].ip.as_deref(), Some("10.0.0.2"));
    }
}
