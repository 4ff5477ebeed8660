//! Which pods a ReplicaSet deletes first when it has too many, in Kubernetes' order
//! (`ActivePodsWithRanks`, with `PodDeletionCost` and `LogarithmicScaleDown` on, as they
//! are by default): the first rule that tells two pods apart decides.
//!
//! 1. not yet on a node before on one;
//! 2. Pending before Unknown before Running;
//! 3. not ready before ready;
//! 4. lower `controller.kubernetes.io/pod-deletion-cost` before higher (missing or not an
//!    int32: 0);
//! 5. (more pods of related ReplicaSets on the same node first: every pod here is on this
//!    node, so it never tells two apart);
//! 6. both ready: the more recently ready first, compared by the power of two of their
//!    ready age (pods ready at about the same time are alike), then by UID;
//! 7. more container restarts first;
//! 8. the newer first, by the power of two of their age, then by UID.

use std::cmp::Ordering;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::pods::{is_ready, phase_rank, ready_since};

pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The annotation as Kubernetes reads it: an int32 written without a plus sign or leading
/// zeros; anything else is 0.
pub fn deletion_cost(p: &Pod) -> i32 {
    let Some(v) = p
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST))
    else {
        return 0;
    };
    let canonical = v == "0"
        || v.strip_prefix('-')
            .unwrap_or(v)
            .starts_with(|c: char| ('1'..='9').contains(&c));
    if !canonical {
        return 0;
    }
    v.parse().unwrap_or(0)
}

fn restarts(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| {
            cs.iter().map(|c| c.restart_count).max().unwrap_or(0)
        })
}

fn assigned(p: &Pod) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

/// ⌊log2(age in ns)⌋, -1 for an age that is not positive.
fn age_bucket(t: &Time, now_ns: i128) -> i32 {
    let age = now_ns - t.0.as_nanosecond();
    if age <= 0 {
        -1
    } else {
        127 - age.leading_zeros() as i32
    }
}

/// "a goes first" by time: the later of the two, alike within a power of two of age.
fn later_first(a: Option<&Time>, b: Option<&Time>, pa: &Pod, pb: &Pod, now_ns: i128) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) if x == y => Ordering::Equal,
        (Some(x), Some(y)) => match age_bucket(x, now_ns).cmp(&age_bucket(y, now_ns)) {
            Ordering::Equal => uid(pa).cmp(uid(pb)),
            other => other,
        },
        // A missing time sorts first.
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// `Less` when `a` is deleted before `b`.
pub fn compare(a: &Pod, b: &Pod, now_ns: i128) -> Ordering {
    let by = |f: &dyn Fn(&Pod) -> i64| f(a).cmp(&f(b));
    let order = by(&|p| i64::from(assigned(p)))
        .then_with(|| by(&|p| i64::from(phase_rank(p))))
        .then_with(|| by(&|p| i64::from(is_ready(p))))
        .then_with(|| by(&|p| i64::from(deletion_cost(p))));
    if order != Ordering::Equal {
        return order;
    }
    if is_ready(a) && is_ready(b) {
        let o = later_first(ready_since(a), ready_since(b), a, b, now_ns);
        if o != Ordering::Equal {
            return o;
        }
    }
    restarts(b).cmp(&restarts(a)).then_with(|| {
        let created = |p: &Pod| p.metadata.creation_timestamp.clone();
        later_first(created(a).as_ref(), created(b).as_ref(), a, b, now_ns)
    })
}

/// The `n` pods to delete first.
pub fn to_delete(pods: &[std::sync::Arc<Pod>], n: usize, now_ns: i128) -> Vec<std::sync::Arc<Pod>> {
    let mut sorted = pods.to_vec();
    sorted.sort_by(|a, b| compare(a, b, now_ns));
    sorted.truncate(n);
    sorted
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use serde_json::{Value, json};

    const NOW: &str = "2026-01-01T12:00:00Z";

    fn now() -> i128 {
        NOW.parse::<k8s_openapi::jiff::Timestamp>()
            .unwrap()
            .as_nanosecond()
    }

    fn pod(name: &str, f: impl FnOnce(&mut Value)) -> Arc<Pod> {
        let mut v = json!({"metadata": {"name": name, "uid": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        f(&mut v);
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn order(pods: &[Arc<Pod>]) -> Vec<String> {
        to_delete(pods, pods.len(), now())
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    }

    #[test]
    fn each_rule_in_its_place() {
        let pods = [
            pod("running-ready", |_| {}),
            pod("unassigned", |v| v["spec"]["nodeName"] = "".into()),
            pod("pending", |v| v["status"]["phase"] = "Pending".into()),
            pod("unknown", |v| v["status"]["phase"] = "Unknown".into()),
            pod("not-ready", |v| {
                v["status"]["conditions"][0]["status"] = "False".into()
            }),
            pod("cheap", |v| {
                v["metadata"]["annotations"] = json!({DELETION_COST: "-5"})
            }),
            pod("dear", |v| {
                v["metadata"]["annotations"] = json!({DELETION_COST: "100"})
            }),
        ];
        assert_eq!(
            order(&pods),
            [
                "unassigned",
                "pending",
                "unknown",
                "not-ready",
                "cheap",
                "running-ready",
                "dear"
            ]
        );
    }

    #[test]
    fn recently_ready_then_restarts_then_newer() {
        let pods = [
            pod("old", |_| {}),
            pod("recently-ready", |v| {
                v["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T11:59:00Z".into()
            }),
            pod("restarted", |v| {
                v["status"]["containerStatuses"] = json!([{"name": "c", "image": "x", "imageID": "",
                    "ready": true, "restartCount": 3}])
            }),
        ];
        assert_eq!(order(&pods), ["recently-ready", "restarted", "old"]);
        // Ready within the same power of two of age: alike, then by UID (here the name).
        let close = [
            pod("b", |v| {
                v["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:01Z".into()
            }),
            pod("a", |v| {
                v["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:02Z".into()
            }),
        ];
        assert_eq!(order(&close), ["a", "b"]);
        let newer = [
            pod("older", |_| {}),
            pod("newer", |v| {
                v["metadata"]["creationTimestamp"] = "2026-01-01T11:00:00Z".into()
            }),
        ];
        let not_ready = |p: &Arc<Pod>| {
            let mut q = (**p).clone();
            q.status.as_mut().unwrap().conditions = None;
            Arc::new(q)
        };
        let newer: Vec<Arc<Pod>> = newer.iter().map(not_ready).collect();
        assert_eq!(order(&newer), ["newer", "older"]);
    }

    #[test]
    fn deletion_costs_read_as_kubernetes_reads_them() {
        let with = |v: &str| {
            pod("p", |p| {
                p["metadata"]["annotations"] = json!({DELETION_COST: v})
            })
        };
        assert_eq!(deletion_cost(&with("42")), 42);
        assert_eq!(deletion_cost(&with("-7")), -7);
        assert_eq!(deletion_cost(&with("0")), 0);
        assert_eq!(deletion_cost(&with("+3")), 0);
        assert_eq!(deletion_cost(&with("007")), 0);
        assert_eq!(deletion_cost(&with("99999999999")), 0, "not an int32");
        assert_eq!(deletion_cost(&with("x")), 0);
    }
}
