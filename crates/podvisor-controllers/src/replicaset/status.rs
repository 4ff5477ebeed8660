//! A ReplicaSet's status from its pods, as Kubernetes computes it (`calculateStatus`):
//! replicas, fully labelled, ready and available (ready for longer than `minReadySeconds`)
//! among the active pods it owns, the generation it has seen, and the `ReplicaFailure`
//! condition while creating or deleting pods fails.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;

use super::pods::{is_available, is_ready, labels, ready_since};

/// Why managing the replicas failed, for the condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageError {
    /// `FailedCreate` or `FailedDelete`.
    pub reason: &'static str,
    pub message: String,
}

fn min_ready(rs: &ReplicaSet) -> i32 {
    rs.spec.min_ready_seconds.unwrap_or(0)
}

/// The status `rs` should show, given the active pods it owns.
pub fn compute(
    rs: &ReplicaSet,
    pods: &[Arc<Pod>],
    error: Option<&ManageError>,
    now_ms: i64,
) -> ReplicaSetStatus {
    let template_labels = rs
        .spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let fully = pods
        .iter()
        .filter(|p| {
            let have = labels(p);
            template_labels.iter().all(|(k, v)| have.get(k) == Some(v))
        })
        .count();
    let ready = pods.iter().filter(|p| is_ready(p)).count();
    let available = pods
        .iter()
        .filter(|p| is_available(p, min_ready(rs), now_ms))
        .count();
    let old = rs.status.clone().unwrap_or_default();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    ReplicaSetStatus {
        replicas: count(pods.len()),
        fully_labeled_replicas: Some(count(fully)),
        ready_replicas: Some(count(ready)),
        available_replicas: Some(count(available)),
        observed_generation: rs.metadata.generation,
        conditions: conditions(old.conditions.unwrap_or_default(), error),
        terminating_replicas: None,
    }
}

/// The old conditions with `ReplicaFailure` set (kept as first set while the failure lasts)
/// or removed.
fn conditions(
    mut old: Vec<ReplicaSetCondition>,
    error: Option<&ManageError>,
) -> Option<Vec<ReplicaSetCondition>> {
    let existing = old
        .iter()
        .position(|c| c.type_.as_deref() == Some("ReplicaFailure"));
    match (error, existing) {
        (None, Some(i)) => {
            old.remove(i);
        }
        (Some(e), None) => old.push(ReplicaSetCondition {
            type_: Some("ReplicaFailure".into()),
            status: Some("True".into()),
            reason: Some(e.reason.into()),
            message: Some(e.message.clone()),
            last_transition_time: Some(podvisor_core::time::now()),
        }),
        (Some(e), Some(i)) if old[i].reason.as_deref() != Some(e.reason) => {
            old[i].reason = Some(e.reason.into());
            old[i].message = Some(e.message.clone());
            old[i].last_transition_time = Some(podvisor_core::time::now());
        }
        _ => {}
    }
    (!old.is_empty()).then_some(old)
}

/// Whether writing `new` would change what is stored.
pub fn differs(rs: &ReplicaSet, new: &ReplicaSetStatus) -> bool {
    rs.status.as_ref() != Some(new)
}

/// When to look again so that a ready pod becomes available: the soonest of the ready,
/// not yet available pods, once their `minReadySeconds` have passed.
pub fn next_availability(rs: &ReplicaSet, pods: &[Arc<Pod>], now_ms: i64) -> Option<Duration> {
    let min = min_ready(rs);
    if min <= 0 {
        return None;
    }
    pods.iter()
        .filter(|p| is_ready(p) && !is_available(p, min, now_ms))
        .filter_map(|p| ready_since(p))
        .map(|t| t.0.as_millisecond() + i64::from(min) * 1000 + 1 - now_ms)
        .min()
        .map(|ms| Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rs(min_ready: i32) -> ReplicaSet {
        serde_json::from_value(json!({"metadata": {"name": "web", "generation": 4},
            "spec": {"replicas": 3, "minReadySeconds": min_ready, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "a"}}}}}))
        .unwrap()
    }

    fn pod(labels: Value, ready_at: Option<&str>) -> Arc<Pod> {
        let conditions = match ready_at {
            Some(t) => json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]),
            None => json!([{"type": "Ready", "status": "False"}]),
        };
        Arc::new(
            serde_json::from_value(json!({"metadata": {"labels": labels},
                "status": {"phase": "Running", "conditions": conditions}}))
            .unwrap(),
        )
    }

    fn ms(t: &str) -> i64 {
        t.parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_millisecond()
    }

    #[test]
    fn counts_follow_labels_readiness_and_min_ready_seconds() {
        let pods = [
            pod(
                json!({"app": "web", "tier": "a"}),
                Some("2026-01-01T00:00:00Z"),
            ),
            pod(json!({"app": "web"}), Some("2026-01-01T00:00:55Z")),
            pod(json!({"app": "web", "tier": "a"}), None),
        ];
        let s = compute(&rs(10), &pods, None, ms("2026-01-01T00:01:00Z"));
        assert_eq!(s.replicas, 3);
        assert_eq!(s.fully_labeled_replicas, Some(2));
        assert_eq!(s.ready_replicas, Some(2));
        assert_eq!(
            s.available_replicas,
            Some(1),
            "the second is ready for only 5 s"
        );
        assert_eq!(s.observed_generation, Some(4));
        assert_eq!(
            next_availability(&rs(10), &pods, ms("2026-01-01T00:01:00Z")),
            Some(Duration::from_millis(5_001))
        );
    }

    #[test]
    fn replica_failure_is_set_kept_and_cleared() {
        let mut set = rs(0);
        let e = ManageError {
            reason: "FailedCreate",
            message: "OutOfpods".into(),
        };
        let s = compute(&set, &[], Some(&e), 0);
        let c = &s.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.type_.as_deref(), c.reason.as_deref()),
            (Some("ReplicaFailure"), Some("FailedCreate"))
        );
        set.status = Some(s.clone());
        let again = compute(&set, &[], Some(&e), 0);
        assert!(!differs(&set, &again), "the same failure writes nothing");
        let cleared = compute(&set, &[], None, 0);
        assert!(cleared.conditions.is_none());
        assert!(differs(&set, &cleared));
    }
}
