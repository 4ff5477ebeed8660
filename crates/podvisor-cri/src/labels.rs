//! Label and annotation keys podvisor puts on sandboxes and containers. The
//! `io.kubernetes.*` keys are the kubelet's, so `crictl` and other tools show podvisor's
//! pods the way they show any kubelet's; `podvisor.io/managed` marks what podvisor owns, so
//! housekeeping never touches pods another agent created on the same containerd.

pub const POD_UID: &str = "io.kubernetes.pod.uid";
pub const POD_NAME: &str = "io.kubernetes.pod.name";
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
pub const MANAGED_BY: &str = "podvisor.io/managed";
