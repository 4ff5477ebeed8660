//! What a pod reads of the node's API objects: its configMap, secret, downwardAPI and
//! projected volumes, set up at every sync (so a changed object reaches its files within
//! a resync), and each container's environment, made as it starts.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Container;
use podvisor_core::{PodExt, SharedPod};
use podvisor_cri::RegistryAuth;
use podvisor_volumes::{Environment, ObjectSource, PodFacts, VolumeError, container_env, set_up};
use tracing::debug;

use super::super::{CriSyncError, CriSyncer};
use super::Target;
use crate::kuberuntime::config::pod_state_dir;
use crate::kuberuntime::keyring::Keyring;
use crate::protocol::status::EventType;

/// Where a pod's object volumes and environment are read from, and the node facts the
/// downward API gives.
#[derive(Clone)]
pub struct PodObjects {
    pub source: Arc<dyn ObjectSource>,
    pub allocatable: podvisor_volumes::Allocatable,
    /// The node's address (`status.hostIP`).
    pub host_ip: Option<String>,
}

impl Default for PodObjects {
    fn default() -> Self {
        Self {
            source: Arc::new(podvisor_volumes::NoObjects),
            allocatable: podvisor_volumes::Allocatable {
                pods: 110,
                cpu_milli: 1000,
                memory_bytes: 1 << 30,
            },
            host_ip: None,
        }
    }
}

impl CriSyncer {
    fn facts<'a>(&'a self, pod: &'a SharedPod, pod_ip: Option<&'a str>) -> PodFacts<'a> {
        // A host-network pod's IP is the node's, as its status says.
        let host_ip = self.objects.host_ip.as_deref();
        let pod_ip = if pod.host_network() { host_ip } else { pod_ip };
        PodFacts {
            pod,
            node_name: &self.node.node_name,
            pod_ip,
            host_ip,
            allocatable: self.objects.allocatable,
        }
    }

    /// Writes what the pod's object volumes hold now; a volume that cannot be set up (its
    /// ConfigMap missing, say) fails the sync with a `FailedMount` event, and the pod
    /// waits in ContainerCreating until it can.
    pub(crate) async fn set_up_volumes(&self, pod: &SharedPod) -> Result<(), CriSyncError> {
        let dir = pod_state_dir(&self.node, pod.uid()).join("volumes");
        match set_up(&*self.objects.source, &self.facts(pod, None), &dir).await {
            Ok(changed) if changed.is_empty() => Ok(()),
            Ok(changed) => {
                debug!(pod_uid = %pod.uid(), volumes = ?changed, "volume files written");
                Ok(())
            }
            Err(e) => {
                let message = format!("MountVolume.SetUp failed: {e}");
                self.event(pod, EventType::Warning, "FailedMount", message);
                Err(CriSyncError::Volume(e))
            }
        }
    }

    /// Container `c`'s environment; keys of an `envFrom` object that are no variable names
    /// are skipped with an event.
    pub(crate) async fn environment(
        &self,
        t: &Target<'_>,
        c: &Container,
    ) -> Result<Environment, VolumeError> {
        let facts = self.facts(t.pod, t.sandbox.ip.as_deref());
        let env = container_env(&*self.objects.source, &facts, c).await?;
        if !env.skipped.is_empty() {
            let message = format!(
                "Keys [{}] from envFrom of container {} were skipped since they are considered invalid environment variable names.",
                env.skipped.join(", "),
                c.name
            );
            self.event(
                t.pod,
                EventType::Warning,
                "InvalidEnvironmentVariableNames",
                message,
            );
        }
        if let Some(why) = &env.services_unavailable {
            let message = format!(
                "Container {} starts without the Services' environment variables: the cluster cannot be reached ({why})",
                c.name
            );
            self.event(t.pod, EventType::Warning, "ServicesUnavailable", message);
        }
        Ok(env)
    }

    /// What the pod's `imagePullSecrets` hold for `image`, in the order to try them. A
    /// secret that cannot be read or is no Docker config is skipped with a warning event,
    /// as the kubelet does (the pull may still work without it).
    pub(crate) async fn pull_credentials(&self, pod: &SharedPod, image: &str) -> Vec<RegistryAuth> {
        let spec = pod.spec.as_ref();
        let refs = spec.and_then(|s| s.image_pull_secrets.as_ref());
        let names = refs.into_iter().flatten().map(|r| r.name.as_str());
        let mut keyring = Keyring::default();
        for name in names.filter(|n| !n.is_empty()) {
            let added = match self.objects.source.secret(pod.namespace(), name).await {
                Ok(Some(s)) => keyring.add(&s).map_err(|e| e.to_string()),
                Ok(None) => Err(format!("secret {name:?} not found")),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = added {
                let message = format!(
                    "Unable to retrieve some image pull secrets ({name}); attempting to pull the image may not succeed: {e}"
                );
                self.event(
                    pod,
                    EventType::Warning,
                    "FailedToRetrieveImagePullSecret",
                    message,
                );
            }
        }
        keyring.lookup(image)
    }
}
