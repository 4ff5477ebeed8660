//! Who is told of every CRI call: its method, how long it took and whether it failed
//! (the kubelet's `kubelet_runtime_operations_*` metrics are kept by an observer), and
//! the kubelet's name for each method.

use std::sync::Arc;
use std::time::Duration;

/// Told of every unary CRI call once it has ended (answered, failed, or given up on).
pub trait CallObserver: Send + Sync + 'static {
    fn observe(&self, method: &'static str, took: Duration, failed: bool);
}

pub type Observer = Arc<dyn CallObserver>;

/// The kubelet's `operation_type` for a CRI method (`CreateContainer` →
/// `create_container`), as its instrumented runtime service names them; `unknown` for a
/// method it does not name.
pub fn operation_type(method: &str) -> &'static str {
    match method {
        "Version" => "version",
        "Status" => "status",
        "RunPodSandbox" => "run_podsandbox",
        "StopPodSandbox" => "stop_podsandbox",
        "RemovePodSandbox" => "remove_podsandbox",
        "PodSandboxStatus" => "podsandbox_status",
        "ListPodSandbox" => "list_podsandbox",
        "CreateContainer" => "create_container",
        "StartContainer" => "start_container",
        "StopContainer" => "stop_container",
        "RemoveContainer" => "remove_container",
        "ListContainers" => "list_containers",
        "ContainerStatus" => "container_status",
        "ReopenContainerLog" => "reopen_container_log",
        "ExecSync" => "exec_sync",
        "Exec" => "exec",
        "Attach" => "attach",
        "PortForward" => "port_forward",
        "GetContainerEvents" => "get_container_events",
        "ListContainerStats" => "list_container_stats",
        "ListPodSandboxStats" => "list_podsandbox_stats",
        "ImageStatus" => "image_status",
        "ListImages" => "list_images",
        "PullImage" => "pull_image",
        "RemoveImage" => "remove_image",
        "ImageFsInfo" => "image_fs_info",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::operation_type;

    #[test]
    fn methods_have_the_kubelets_names() {
        assert_eq!(operation_type("RunPodSandbox"), "run_podsandbox");
        assert_eq!(operation_type("CreateContainer"), "create_container");
        assert_eq!(operation_type("ListPodSandbox"), "list_podsandbox");
        assert_eq!(operation_type("Frobnicate"), "unknown");
    }
}
