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
//!    ready age (pods ready at about the same time are alike);
//! 7. more container restarts first;
//! 8. the newer first, by the power of two of their age;
//! 9. by UID.

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

/// ⌊log2(age in ns)⌋, -1 for an age that is not positive, `i32::MIN` for no time (which
/// sorts first, as Kubernetes' "zero time").
fn age_bucket(t: Option<&Time>, now_ns: i128) -> i32 {
    let Some(t) = t else { return i32::MIN };
    let age = now_ns - t.0.as_nanosecond();
    if age <= 0 {
        -1
    } else {
        127 - age.leading_zeros() as i32
    }
}

/// A pod's place in the deletion order, as a key: smaller goes first. A key makes the
/// order total, which a sort needs (Rust's sort may panic on a comparator that is not);
/// Kubernetes compares pod pairs, and where two pods are ready or were made within the
/// same power of two of age, it decides by UID at once where this key goes on to the
/// restarts: the one place the orders can differ.
type Key<'a> = (bool, u8, bool, i32, i32, i32, i32, &'a str);

fn key(p: &Pod, now_ns: i128) -> Key<'_> {
    // Both ready: the more recently ready (the smaller age bucket) first; a pod that is
    // not ready has already been ordered before the ready ones.
    let ready_bucket = if is_ready(p) {
        age_bucket(ready_since(p), now_ns)
    } else {
        0
    };
    let created = age_bucket(p.metadata.creation_timestamp.as_ref(), now_ns);
    (
        assigned(p),
        phase_rank(p),
        is_ready(p),
        deletion_cost(p),
        ready_bucket,
        -restarts(p),
        created,
        uid(p),
    )
}

/// `Less` when `a` is deleted before `b`.
pub fn compare(a: &Pod, b: &Pod, now_ns: i128) -> Ordering {
    key(a, now_ns).cmp(&key(b, now_ns))
}

/// The `n` pods to delete first.
pub fn to_delete(pods: &[std::sync::Arc<Pod>], n: usize, now_ns: i128) -> Vec<std::sync::Arc<Pod>> {
    let mut sorted = pods.to_vec();
    sorted.sort_by_cached_key(|p| {
        let (a, b, c, d, e, f, g, u) = key(p, now_ns);
        (a, b, c, d, e, f, g, u.to_string())
    });
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

    #[test]
    fn the_order_is_total_over_many_alike_pods() {
        // Times to the second, as the API writes them: many pods alike in every rule.
        let mut seed = 7u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let pods: Vec<Arc<Pod>> = (0..300)
            .map(|i| {
                let (ready, restarts, minute) = (next(3) != 0, next(3), next(60));
                pod(&format!("p{i:03}"), |v| {
                    v["metadata"]["creationTimestamp"] = format!("2026-01-01T11:{minute:02}:00Z").into();
                    v["status"]["conditions"][0]["status"] = if ready { "True" } else { "False" }.into();
                    v["status"]["conditions"][0]["lastTransitionTime"] =
                        format!("2026-01-01T11:{:02}:00Z", (minute + 1).min(59)).into();
                    v["status"]["containerStatuses"] = json!([{"name": "c", "image": "x", "imageID": "",
                        "ready": ready, "restartCount": restarts}]);
                })
            })
            .collect();
        let sorted = to_delete(&pods, pods.len(), now());
        for w in sorted.windows(2) {
            assert_ne!(compare(&w[0], &w[1], now()), Ordering::Greater);
        }
        let again = to_delete(&pods, pods.len(), now());
        let uids = |v: &[Arc<Pod>]| v.iter().map(|p| p.metadata.uid.clone()).collect::<Vec<_>>();
        assert_eq!(uids(&sorted), uids(&again), "deterministic");
    }
}
