//! Admission under pressure, as the kubelet's eviction manager admits: critical pods
//! always; under memory pressure alone, every pod but a BestEffort one that does not
//! tolerate the memory-pressure taint; under any other pressure, none.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, Taint};
use podvisor_core::PodExt;
use podvisor_core::qos::{QosClass, qos_class};

use crate::message;
use crate::signal::Pressure;

/// The priority from which a pod is critical to the system (`system-cluster-critical` and
/// above).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// Static and mirror pods and system-critical priorities: admitted under pressure and
/// never evicted for it.
pub fn is_critical(pod: &Pod) -> bool {
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(podvisor_core::pod::MIRROR_ANNOTATION));
    let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
    pod.is_static() || mirror || priority >= SYSTEM_CRITICAL_PRIORITY
}

/// `Err(message)` when the node must turn the pod away (reason [`message::REASON`]).
pub fn admit(pod: &Pod, conditions: &BTreeSet<Pressure>) -> Result<(), String> {
    if conditions.is_empty() || is_critical(pod) {
        return Ok(());
    }
    if conditions.len() == 1 && conditions.contains(&Pressure::Memory) {
        let taint = Taint {
            key: Pressure::Memory.taint_key().into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let tolerates = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or(&[])
            .iter()
            .any(|t| podvisor_core::taints::tolerates(t, &taint));
        if qos_class(pod) != QosClass::BestEffort || tolerates {
            return Ok(());
        }
    }
    Err(message::refusal(conditions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn memory_pressure_turns_away_best_effort_pods_only_and_disk_pressure_all() {
        let best_effort = pod(serde_json::json!({"spec": {"containers": [{"name": "c"}]}}));
        let burstable = pod(serde_json::json!({"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"memory": "1Mi"}}}
        ]}}));
        let tolerant = pod(serde_json::json!({"spec": {"containers": [{"name": "c"}],
            "tolerations": [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"}]}}));
        let critical = pod(serde_json::json!({"spec": {"containers": [{"name": "c"}],
            "priority": 2_000_001_000}}));
        let memory = BTreeSet::from([Pressure::Memory]);
        assert_eq!(
            admit(&best_effort, &memory),
            Err("The node had condition: [MemoryPressure]. ".into())
        );
        assert_eq!(admit(&burstable, &memory), Ok(()));
        assert_eq!(admit(&tolerant, &memory), Ok(()));
        let disk = BTreeSet::from([Pressure::Memory, Pressure::Disk]);
        assert!(admit(&burstable, &disk).is_err());
        assert!(admit(&tolerant, &disk).is_err());
        assert_eq!(admit(&critical, &disk), Ok(()));
        assert_eq!(admit(&best_effort, &BTreeSet::new()), Ok(()));
    }
}
