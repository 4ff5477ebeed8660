//! Label and annotation keys podvisor puts on sandboxes and containers. The
//! `io.kubernetes.*` keys are the kubelet's, so `crictl` and other tools show podvisor's
//! pods the way they show any kubelet's; `podvisor.io/managed-by` names the node agent that
//! owns a pod, so housekeeping never touches pods another agent (a kubelet, or another
//! podvisor, as in tests) created on the same containerd.

pub const POD_UID: &str = "io.kubernetes.pod.uid";
pub const POD_NAME: &str = "io.kubernetes.pod.name";
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
pub const MANAGED_BY: &str = "podvisor.io/managed-by";
/// An annotation on every container: its pod's grace period in seconds (the kubelet's
/// key), so a container can be stopped with it when no spec is at hand.
pub const GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";

/// An annotation on a container: the host file bound to its `terminationMessagePath`,
/// read for its termination message once it exited.
pub const TERMINATION_LOG: &str = "podvisor.io/termination-log";
/// An annotation on a container: its `terminationMessagePolicy`.
pub const TERMINATION_POLICY: &str = "podvisor.io/termination-message-policy";

/// Whether the agent of node `node` created this runtime pod.
pub fn owned_by(pod: &crate::Pod, node: &str) -> bool {
    let mine = |m: &Option<String>| m.as_deref() == Some(node);
    pod.sandboxes.iter().any(|s| mine(&s.managed_by))
        || pod.containers.iter().any(|c| mine(&c.managed_by))
}
