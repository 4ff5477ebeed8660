//! A container's `oom_score_adj`, by the kubelet's policy (`GetContainerOOMScoreAdjust`):
//! what the kernel kills first when the node runs out of memory. Guaranteed pods and
//! node-critical ones -997 (only the kubelet, -999, and the runtime's sandboxes, -998, are
//! safer), BestEffort 1000 (killed first); a Burstable container 1000 less a thousandth
//! per thousandth of the node's memory it requests, kept within 3..=999 so it always sits
//! between the two; a sidecar (restartable init container) no higher than the pod's
//! smallest regular container, so it outlives what it serves.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::PodExt;
use crate::qos::{QosClass, pair, qos_class};

pub const GUARANTEED: i64 = -997;
pub const BEST_EFFORT: i64 = 1000;
/// The priority from which a pod is critical (`scheduling.SystemCriticalPriority`).
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

fn node_critical(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let class = spec.and_then(|s| s.priority_class_name.as_deref());
    let priority = spec.and_then(|s| s.priority).unwrap_or(0);
    class == Some("system-node-critical")
        && (pod.is_static() || priority >= SYSTEM_CRITICAL_PRIORITY)
}

fn is_sidecar(pod: &Pod, c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
        && pod.init_containers().iter().any(|i| i.name == c.name)
}

fn adjust_for(memory_request: i64, capacity: i64) -> i64 {
    let capacity = i128::from(capacity.max(1));
    let adj = 1000 - 1000 * i128::from(memory_request) / capacity;
    // A request beyond the machine (admission refuses it; this never wraps) scores lowest.
    i64::try_from(adj.clamp(-1000, 1000)).unwrap_or(0)
}

/// `c`'s `oom_score_adj` in `pod` on a node with `capacity` bytes of memory.
pub fn oom_score_adj(pod: &Pod, c: &Container, capacity: i64) -> i64 {
    if node_critical(pod) {
        return GUARANTEED;
    }
    match qos_class(pod) {
        QosClass::Guaranteed => return GUARANTEED,
        QosClass::BestEffort => return BEST_EFFORT,
        QosClass::Burstable => {}
    }
    let mut adj = adjust_for(pair(c, "memory").0, capacity);
    if is_sidecar(pod, c) {
        let smallest = pod.containers().iter().map(|r| pair(r, "memory").0).min();
        if let Some(min) = smallest.filter(|m| *m != 0) {
            adj = adj.min(adjust_for(min, capacity));
        }
    }
    if adj < 1000 + GUARANTEED {
        1000 + GUARANTEED
    } else if adj == BEST_EFFORT {
        BEST_EFFORT - 1
    } else {
        adj
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const GIB: i64 = 1 << 30;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": spec})).unwrap()
    }

    fn adj(p: &Pod, name: &str) -> i64 {
        let c = p
            .init_containers()
            .iter()
            .chain(p.containers())
            .find(|c| c.name == name);
        oom_score_adj(p, c.unwrap(), 4 * GIB)
    }

    #[test]
    fn each_class_as_the_kubelet_scores_it() {
        let best = pod(json!({"containers": [{"name": "a"}]}));
        assert_eq!(adj(&best, "a"), 1000);
        let guaranteed = pod(json!({"containers": [{"name": "a", "resources": {
            "limits": {"cpu": "1", "memory": "1Gi"}}}]}));
        assert_eq!(adj(&guaranteed, "a"), -997);
        // A quarter of the node's memory: 1000 - 250.
        let burstable = pod(json!({"containers": [
            {"name": "a", "resources": {"requests": {"memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "100m"}}}]}));
        assert_eq!(adj(&burstable, "a"), 750);
        assert_eq!(
            adj(&burstable, "b"),
            999,
            "no memory asked: still below BestEffort"
        );
        let huge = pod(json!({"containers": [
            {"name": "a", "resources": {"requests": {"memory": "8Gi"}}}]}));
        assert_eq!(adj(&huge, "a"), 3, "above Guaranteed, whatever it asks");
        let absurd = pod(json!({"containers": [
            {"name": "a", "resources": {"requests": {"memory": "2Ei"}}}]}));
        let c = &absurd.containers()[0];
        assert_eq!(
            oom_score_adj(&absurd, c, 1),
            3,
            "no overflow on a tiny capacity"
        );
    }

    #[test]
    fn a_sidecar_scores_no_higher_than_the_smallest_regular_container() {
        let p = pod(json!({
            "initContainers": [{"name": "side", "restartPolicy": "Always",
                                "resources": {"requests": {"memory": "256Mi"}}}],
            "containers": [{"name": "a", "resources": {"requests": {"memory": "2Gi"}}},
                           {"name": "b", "resources": {"requests": {"memory": "1Gi"}}}]}));
        assert_eq!(adj(&p, "side"), 750, "as b, the smaller");
        assert_eq!(adj(&p, "b"), 750);
        assert_eq!(adj(&p, "a"), 500);
    }

    #[test]
    fn a_node_critical_static_pod_is_scored_as_guaranteed() {
        let mut p = pod(json!({"priorityClassName": "system-node-critical",
            "containers": [{"name": "a"}]}));
        assert_eq!(
            adj(&p, "a"),
            1000,
            "not critical without a priority or a static source"
        );
        p.spec.as_mut().unwrap().priority = Some(2_000_001_000);
        assert_eq!(adj(&p, "a"), -997);
    }
}
