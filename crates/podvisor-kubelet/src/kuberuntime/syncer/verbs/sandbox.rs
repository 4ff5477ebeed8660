//! Creating a pod's sandbox, adopting the one an earlier attempt made when its answer was
//! lost (the runtime then says the name is taken).

use podvisor_core::SharedPod;
use podvisor_cri::SandboxState;
use tracing::info;

use super::super::CriSyncer;
use super::SandboxInfo;
use crate::kuberuntime::config::sandbox_config;
use crate::protocol::sync::SyncError;

impl CriSyncer {
    pub(crate) async fn create_sandbox(
        &self,
        pod: &SharedPod,
        attempt: u32,
    ) -> Result<SandboxInfo, SyncError> {
        let uid = pod.uid();
        if let Some(cgroups) = &self.node.pod_cgroups {
            cgroups
                .ensure(pod)
                .map_err(|e| SyncError::Other(e.to_string()))?;
        }
        let config = sandbox_config(&self.node, pod, attempt);
        let id = match self.runtime.run_sandbox(&config).await {
            Ok(id) => id,
            Err(e) if e.is_already_exists() => {
                // Created by an earlier attempt whose answer we never saw: adopt it.
                let status = self.runtime.pod_status(uid.as_str()).await?;
                status
                    .sandboxes
                    .iter()
                    .find(|s| s.attempt == attempt && s.state == SandboxState::Ready)
                    .map(|s| s.id.clone())
                    .ok_or(e)?
            }
            Err(e) => return Err(e.into()),
        };
        let ip = self.runtime.sandbox_status(&id).await?.ip;
        info!(pod_uid = %uid, sandbox = %id, attempt, ip = ?ip, "sandbox ready");
        Ok(SandboxInfo { id, ip, config })
    }

    /// The sandbox the plan keeps, as the runtime status shows it.
    pub(crate) fn kept_sandbox(
        &self,
        pod: &SharedPod,
        id: String,
        ip: Option<String>,
        attempt: u32,
    ) -> SandboxInfo {
        SandboxInfo {
            id,
            ip,
            config: sandbox_config(&self.node, pod, attempt),
        }
    }
}
