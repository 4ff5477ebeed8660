//! Local storage eviction of the kubelet's eviction manager, for `emptyDir.sizeLimit`: a
//! pod whose emptyDir on disk holds more than its limit is evicted, its containers
//! stopped and its status Failed with reason `Evicted` and the kubelet's message, a
//! `DisruptionTarget` condition and a Warning event; it is not run again. Static pods are
//! never evicted (the kubelet's critical pods), nor finished ones. (A memory-backed
//! emptyDir is a tmpfs of its limit's size: writes past it fail instead.)

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus as ApiPodStatus};
use podvisor_core::{Phase, SharedPod, quantity};

use crate::kuberuntime::config::{NodeConfig, empty_dir_path};
use crate::protocol::updates::StatusFn;
use crate::stats::disk::usage;

pub(crate) const REASON: &str = podvisor_eviction::message::REASON;

/// An emptyDir over its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub volume: String,
    pub limit: String,
}

impl Exceeded {
    /// The kubelet's words.
    pub(crate) fn message(&self) -> String {
        format!(
            "Usage of EmptyDir volume {:?} exceeds the limit {:?}. ",
            self.volume, self.limit
        )
    }
}

/// The pod's emptyDir volumes on disk with a `sizeLimit` above zero (the kubelet ignores a
/// zero limit): (name, limit text, bytes).
pub(crate) fn limited(pod: &Pod) -> Vec<(String, String, u64)> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref());
    volumes
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| {
            let e = v.empty_dir.as_ref()?;
            if e.medium.as_deref() == Some("Memory") {
                return None;
            }
            let limit = e.size_limit.as_ref()?;
            let bytes = u64::try_from(quantity::parse_units(&limit.0).ok()?).ok()?;
            (bytes > 0).then(|| (v.name.clone(), limit.0.clone(), bytes))
        })
        .collect()
}

/// The first emptyDir of the pod over its limit, if any.
pub(crate) fn over_limit(node: &NodeConfig, pod: &SharedPod) -> Option<Exceeded> {
    limited(pod).into_iter().find_map(|(volume, limit, bytes)| {
        let dir = empty_dir_path(node, pod.uid(), &volume);
        (usage(&dir, bytes).bytes > bytes).then_some(Exceeded { volume, limit })
    })
}

/// What the terminated pod's status says.
pub(crate) fn evicted(message: String) -> StatusFn {
    Arc::new(move |s: &mut ApiPodStatus| {
        s.phase = Some(Phase::Failed.as_str().into());
        s.reason = Some(REASON.into());
        s.message = Some(message.clone());
        let conditions = s.conditions.get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "DisruptionTarget");
        conditions.push(PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some("TerminationByKubelet".into()),
            message: Some(message.clone()),
            last_transition_time: Some(podvisor_core::time::now()),
            ..PodCondition::default()
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_disk_empty_dirs_with_a_limit_are_watched_and_the_status_says_why() {
        let pod: Pod =
            serde_json::from_value(serde_json::json!({"spec": {"containers": [], "volumes": [
                {"name": "disk", "emptyDir": {"sizeLimit": "1Mi"}},
                {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
                {"name": "free", "emptyDir": {}}
            ]}}))
            .unwrap();
        assert_eq!(limited(&pod), vec![("disk".into(), "1Mi".into(), 1 << 20)]);
        let ex = Exceeded {
            volume: "disk".into(),
            limit: "1Mi".into(),
        };
        let mut s = ApiPodStatus::default();
        evicted(ex.message())(&mut s);
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(s.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            s.message.as_deref(),
            Some("Usage of EmptyDir volume \"disk\" exceeds the limit \"1Mi\". ")
        );
        let c = &s.conditions.unwrap()[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str()),
            ("DisruptionTarget", "True")
        );
    }
}
