//! What the pod workers read from a Kubernetes `Pod`.

use k8s_openapi::api::core::v1::Pod;

/// The grace period of a pod that does not say (the API server's default).
pub const DEFAULT_GRACE_PERIOD: i64 = 30;

/// Where a pod came from; anything but `api` is a static pod (the kubelet's rule).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";

pub fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// `name_namespace`: static pods with the same full name never run at the same time.
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or("default")
    )
}

pub fn is_static(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
        .is_some_and(|s| s != "api")
}

pub fn is_terminal_phase(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

pub fn is_deleted(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

pub fn deletion_grace_period(pod: &Pod) -> Option<i64> {
    pod.metadata.deletion_grace_period_seconds
}

pub fn spec_grace_period(pod: &Pod) -> i64 {
    pod.spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(DEFAULT_GRACE_PERIOD)
}

/// A stand-in API pod for a pod known only from the runtime.
pub fn from_runtime(r: &podvisor_cri::PodRef) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(r.uid.clone());
    pod.metadata.name = Some(r.name.clone());
    pod.metadata.namespace = Some(r.namespace.clone());
    pod
}
