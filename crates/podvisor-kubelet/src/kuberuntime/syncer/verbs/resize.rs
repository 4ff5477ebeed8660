//! Resizing running containers in place (the kubelet's `doPodResizeAction`): a memory
//! limit is not lowered to or below what the container uses now (the kernel would have to
//! reclaim it, or refuse); the pod's cgroup is first widened to hold both the old and the
//! new limits, then each container gets its new CPU and memory through the runtime
//! (UpdateContainerResources), then the pod's cgroup gets its new limits exactly. A
//! failure is an event and the `PodResizeInProgress` condition's `Error`; the sync retries.

use podvisor_core::{PodExt, SharedPod};
use podvisor_cri::{LinuxContainerResources, PodStatus};

use super::super::CriSyncer;
use crate::kuberuntime::actions::ContainerResize;
use crate::kuberuntime::config::resources;
use crate::protocol::status::EventType;
use crate::protocol::sync::SyncError;

impl CriSyncer {
    pub(crate) async fn resize(
        &self,
        pod: &SharedPod,
        status: &PodStatus,
        resizes: &[ContainerResize],
    ) -> Result<(), SyncError> {
        let mut updates = Vec::with_capacity(resizes.len());
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
            updates.push((r, linux));
        }
        self.check_memory(status, &updates)
            .await
            .map_err(|m| self.resize_failed(pod, m))?;
        let cgroups = self.node.pod_cgroups.as_ref();
        if let Some(cg) = cgroups {
            cg.widen(pod)
                .map_err(|e| self.resize_failed(pod, e.to_string()))?;
        }
        for (r, linux) in &updates {
            self.runtime
                .update_container_resources(&r.id, linux)
                .await
                .map_err(|e| self.resize_failed(pod, format!("container {}: {e}", r.name)))?;
        }
        if let Some(cg) = cgroups {
            cg.ensure(pod)
                .map_err(|e| self.resize_failed(pod, e.to_string()))?;
        }
        Ok(())
    }

    /// A lowered memory limit must stay above what the container uses now (the kubelet's
    /// `validateMemoryResizeAction`, with its words).
    async fn check_memory(
        &self,
        status: &PodStatus,
        updates: &[(&ContainerResize, LinuxContainerResources)],
    ) -> Result<(), String> {
        let lowered: Vec<(&ContainerResize, i64)> = updates
            .iter()
            .filter_map(|(r, want)| {
                let have = status.containers.iter().find(|c| c.id == r.id)?;
                let now = have.resources.as_ref()?.memory_limit;
                let new = want.memory_limit_in_bytes;
                (new > 0 && (now == 0 || new < now)).then_some((*r, new))
            })
            .collect();
        if lowered.is_empty() {
            return Ok(());
        }
        let usage = self
            .runtime
            .container_usage()
            .await
            .map_err(|e| format!("unable to read memory usage: {e}"))?;
        let mut errors = Vec::new();
        for (r, limit) in lowered {
            let used = usage
                .iter()
                .find(|u| u.id == r.id)
                .and_then(|u| u.memory.as_ref())
                .map(|m| m.usage.unwrap_or(m.working_set));
            match used {
                None => errors.push(format!("missing container {:?} memory usage", r.name)),
                Some(used) if used >= limit.unsigned_abs() => errors.push(format!(
                    "attempting to set container {:?} memory limit ({limit}) below current usage ({used})",
                    r.name
                )),
                Some(_) => {}
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "cannot decrease memory limits: {}",
                errors.join(", ")
            )),
        }
    }

    fn resize_failed(&self, pod: &SharedPod, message: String) -> SyncError {
        let message = format!("Pod resize failed: {message}");
        self.event(pod, EventType::Warning, "ResizeError", message.clone());
        SyncError::Other(message)
    }
}
