//! Resizing running containers in place (the kubelet's `doPodResizeAction`): the pod's
//! cgroup is first widened to hold both the old and the new limits, then each container
//! gets its new CPU and memory through the runtime (UpdateContainerResources), then the
//! pod's cgroup gets its new limits exactly. A failure is an event and fails the sync,
//! which retries it.

use podvisor_core::{PodExt, SharedPod};

use super::super::CriSyncer;
use crate::kuberuntime::actions::ContainerResize;
use crate::kuberuntime::config::resources;
use crate::protocol::status::EventType;
use crate::protocol::sync::SyncError;

impl CriSyncer {
    pub(crate) async fn resize(
        &self,
        pod: &SharedPod,
        resizes: &[ContainerResize],
    ) -> Result<(), SyncError> {
        let cgroups = self.node.pod_cgroups.as_ref();
        if let Some(cg) = cgroups {
            cg.widen(pod)
                .map_err(|e| self.resize_failed(pod, e.to_string()))?;
        }
        for r in resizes {
            let list = if r.init {
                pod.init_containers()
            } else {
                pod.containers()
            };
            let Some(c) = list.get(r.index) else {
                continue;
            };
            let oom = podvisor_core::oom::oom_score_adj(pod, c, self.node.memory_capacity);
            let linux = resources(c, oom).map_err(|e| self.resize_failed(pod, e.to_string()))?;
            self.runtime
                .update_container_resources(&r.id, &linux)
                .await
                .map_err(|e| self.resize_failed(pod, format!("container {}: {e}", r.name)))?;
        }
        if let Some(cg) = cgroups {
            cg.ensure(pod)
                .map_err(|e| self.resize_failed(pod, e.to_string()))?;
        }
        Ok(())
    }

    fn resize_failed(&self, pod: &SharedPod, message: String) -> SyncError {
        let message = format!("Pod resize failed: {message}");
        self.event(pod, EventType::Warning, "ResizeError", message.clone());
        SyncError::Other(message)
    }
}
