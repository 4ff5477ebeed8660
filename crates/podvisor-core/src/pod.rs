//! What everyone reads from a Kubernetes `Pod`, in one place ([`PodExt`]), and the form a
//! pod travels between actors in ([`SharedPod`]): behind an `Arc`, with its UID, which a
//! pod past parsing cannot lack.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Pod, Volume};
use serde::Serialize;

use crate::grace::GracePeriod;
use crate::key::ObjectKey;
use crate::phase::{Phase, RestartPolicy};
use crate::uid::PodUid;

/// Where a pod came from; anything but `api` is a static pod (the kubelet's rule).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// A mirror pod (the API's read-only copy of a static pod) carries this annotation, whose
/// value is the static pod's UID.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The pod conditions the kubelet computes; the others (`DisruptionTarget` from taint
/// eviction, a readiness gate's, a controller's own) belong to whoever set them, and the
/// kubelet's status manager keeps them as they are.
pub const KUBELET_CONDITIONS: [&str; 7] = [
    "PodScheduled",
    "Ready",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
    "PodResizePending",
    "PodResizeInProgress",
];

/// Whether the kubelet computes pod condition `type_` (see [`KUBELET_CONDITIONS`]).
pub fn kubelet_owns_condition(type_: &str) -> bool {
    KUBELET_CONDITIONS.contains(&type_)
}

/// The service account a pod runs as: `serviceAccountName`, else the deprecated
/// `serviceAccount`, else `default`.
pub fn service_account(spec: Option<&k8s_openapi::api::core::v1::PodSpec>) -> &str {
    let named = spec
        .into_iter()
        .flat_map(|s| [&s.service_account_name, &s.service_account]);
    named
        .flatten()
        .map(String::as_str)
        .find(|n| !n.is_empty())
        .unwrap_or("default")
}
/// The namespace of a pod that does not name one.
pub(crate) const DEFAULT_NAMESPACE: &str = "default";

/// The pod accessors of the node agent (and, next, the store and the controllers).
/// An ephemeral container as the container it runs as (the kubelet's
/// `(*v1.Container)(&ec.EphemeralContainerCommon)`): every field but the target.
pub fn ephemeral_as_container(ec: &EphemeralContainer) -> Container {
    Container {
        name: ec.name.clone(),
        image: ec.image.clone(),
        command: ec.command.clone(),
        args: ec.args.clone(),
        working_dir: ec.working_dir.clone(),
        ports: ec.ports.clone(),
        env_from: ec.env_from.clone(),
        env: ec.env.clone(),
        resources: ec.resources.clone(),
        resize_policy: ec.resize_policy.clone(),
        restart_policy: ec.restart_policy.clone(),
        restart_policy_rules: ec.restart_policy_rules.clone(),
        volume_mounts: ec.volume_mounts.clone(),
        volume_devices: ec.volume_devices.clone(),
        liveness_probe: ec.liveness_probe.clone(),
        readiness_probe: ec.readiness_probe.clone(),
        startup_probe: ec.startup_probe.clone(),
        lifecycle: ec.lifecycle.clone(),
        termination_message_path: ec.termination_message_path.clone(),
        termination_message_policy: ec.termination_message_policy.clone(),
        image_pull_policy: ec.image_pull_policy.clone(),
        security_context: ec.security_context.clone(),
        stdin: ec.stdin,
        stdin_once: ec.stdin_once,
        tty: ec.tty,
    }
}

pub trait PodExt {
    fn pod(&self) -> &Pod;

    fn name(&self) -> &str {
        self.pod().metadata.name.as_deref().unwrap_or("")
    }

    fn namespace(&self) -> &str {
        self.pod()
            .metadata
            .namespace
            .as_deref()
            .unwrap_or(DEFAULT_NAMESPACE)
    }

    /// Namespace and name: static pods with one key never run at the same time.
    fn key(&self) -> ObjectKey {
        ObjectKey::pod(self.namespace(), self.name())
    }

    fn is_static(&self) -> bool {
        self.pod()
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
            .is_some_and(|s| s != "api")
    }

    /// The phase the pod's status records; `None` when it records none or one the API
    /// does not know.
    fn phase(&self) -> Option<Phase> {
        self.pod().status.as_ref()?.phase.as_deref()?.parse().ok()
    }

    /// Succeeded or Failed: it will never run again.
    fn is_terminal(&self) -> bool {
        self.phase().is_some_and(Phase::is_terminal)
    }

    fn is_deleted(&self) -> bool {
        self.pod().metadata.deletion_timestamp.is_some()
    }

    /// The grace period its deletion asked for, if it is being deleted.
    fn deletion_grace_period(&self) -> Option<GracePeriod> {
        self.pod()
            .metadata
            .deletion_grace_period_seconds
            .map(GracePeriod::from_seconds)
    }

    /// `spec.terminationGracePeriodSeconds`, or the API's default.
    fn spec_grace_period(&self) -> GracePeriod {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .map_or(GracePeriod::DEFAULT, GracePeriod::from_seconds)
    }

    fn restart_policy(&self) -> RestartPolicy {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.as_deref())
            .and_then(RestartPolicy::parse)
            .unwrap_or_default()
    }

    fn host_network(&self) -> bool {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false)
    }

    fn containers(&self) -> &[Container] {
        self.pod()
            .spec
            .as_ref()
            .map_or(&[], |s| s.containers.as_slice())
    }

    fn init_containers(&self) -> &[Container] {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or(&[])
    }

    fn ephemeral_containers(&self) -> &[EphemeralContainer] {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.ephemeral_containers.as_deref())
            .unwrap_or(&[])
    }

    fn volumes(&self) -> &[Volume] {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or(&[])
    }
}

impl PodExt for Pod {
    fn pod(&self) -> &Pod {
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pod {namespace}/{name} has no metadata.uid")]
pub struct MissingUid {
    pub namespace: String,
    pub name: String,
}

/// A pod as actors pass it around: shared, never copied, and keyed by its UID.
#[derive(Clone)]
pub struct SharedPod {
    uid: PodUid,
    pod: Arc<Pod>,
}

/// Two handles on one copy are equal without looking inside (a manifest rescan hands the
/// sync loop the same copies it has: comparing 500 pods field by field is not free).
impl PartialEq for SharedPod {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.pod, &other.pod) || (self.uid == other.uid && self.pod == other.pod)
    }
}

impl SharedPod {
    /// Refuses a pod without a UID: past this point every pod has one.
    pub fn new(pod: Pod) -> Result<Self, MissingUid> {
        Self::from_arc(Arc::new(pod))
    }

    pub(crate) fn from_arc(pod: Arc<Pod>) -> Result<Self, MissingUid> {
        match pod.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
            Some(uid) => Ok(Self {
                uid: PodUid::from(uid),
                pod,
            }),
            None => Err(MissingUid {
                namespace: pod.namespace().to_string(),
                name: pod.name().to_string(),
            }),
        }
    }

    pub fn uid(&self) -> &PodUid {
        &self.uid
    }

    pub fn arc(&self) -> &Arc<Pod> {
        &self.pod
    }

    /// A changed copy; the UID stays what it was (it is the pod's identity).
    pub fn edited(&self, edit: impl FnOnce(&mut Pod)) -> SharedPod {
        let mut pod = (*self.pod).clone();
        edit(&mut pod);
        pod.metadata.uid = Some(self.uid.to_string());
        SharedPod {
            uid: self.uid.clone(),
            pod: Arc::new(pod),
        }
    }
}

impl PodExt for SharedPod {
    fn pod(&self) -> &Pod {
        &self.pod
    }
}

impl Deref for SharedPod {
    type Target = Pod;
    fn deref(&self) -> &Pod {
        &self.pod
    }
}

impl fmt::Debug for SharedPod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedPod")
            .field("uid", &self.uid)
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .field("resource_version", &self.metadata.resource_version)
            .finish()
    }
}

impl Serialize for SharedPod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.pod.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    use super::*;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("web".into());
        p.metadata.uid = Some("u1".into());
        p
    }

    #[test]
    fn a_shared_pod_needs_a_uid_and_keeps_it_through_edits() {
        let mut no_uid = pod();
        no_uid.metadata.uid = None;
        assert_eq!(
            SharedPod::new(no_uid).unwrap_err().to_string(),
            "pod default/web has no metadata.uid"
        );
        let p = SharedPod::new(pod()).unwrap();
        assert_eq!(p.uid(), "u1");
        let e = p.edited(|p| {
            p.metadata.uid = Some("other".into());
            p.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
        });
        assert_eq!(e.uid(), "u1");
        assert_eq!(e.metadata.uid.as_deref(), Some("u1"));
        assert_ne!(e, p);
    }

    #[test]
    fn accessors_apply_the_api_defaults() {
        let mut p = pod();
        assert_eq!(p.namespace(), "default");
        assert_eq!(p.spec_grace_period(), GracePeriod::DEFAULT);
        assert_eq!(p.restart_policy(), RestartPolicy::Always);
        assert!(!p.is_static() && !p.is_terminal() && !p.host_network());
        p.spec = Some(PodSpec {
            termination_grace_period_seconds: Some(0),
            restart_policy: Some("Never".into()),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            phase: Some("Failed".into()),
            ..Default::default()
        });
        p.metadata.annotations =
            Some([(CONFIG_SOURCE_ANNOTATION.to_string(), "file".to_string())].into());
        assert_eq!(p.spec_grace_period().seconds(), 1);
        assert_eq!(p.restart_policy(), RestartPolicy::Never);
        assert_eq!(p.phase(), Some(Phase::Failed));
        assert!(p.is_terminal() && p.is_static());
        assert_eq!(p.key(), ObjectKey::pod("default", "web"));
    }
}
