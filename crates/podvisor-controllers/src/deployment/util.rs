//! What the Deployment controller asks of ReplicaSets, as plain functions (Kubernetes'
//! `deployment/util`): revisions, the pod-template hash that names a ReplicaSet, templates
//! compared without that hash, surge and unavailability bounds, and replica counts.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podvisor_core::intstr::scaled;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub const HASH_LABEL: &str = "pod-template-hash";
/// Annotations of a Deployment a ReplicaSet does not inherit.
const NOT_COPIED: [&str; 5] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

pub fn replicas(d: &Deployment) -> i32 {
    d.spec.replicas.unwrap_or(1)
}

pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(0)
}

pub fn available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

pub fn revision(rs: &ReplicaSet) -> i64 {
    annotation(rs, REVISION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn annotation<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    rs.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub fn is_recreate(d: &Deployment) -> bool {
    let strategy = d.spec.strategy.as_ref();
    strategy.and_then(|s| s.type_.as_deref()) == Some("Recreate")
}

fn rolling_value(d: &Deployment, surge: bool) -> IntOrString {
    let r = d
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let v = r.and_then(|r| {
        if surge {
            r.max_surge.clone()
        } else {
            r.max_unavailable.clone()
        }
    });
    v.unwrap_or_else(|| IntOrString::String("25%".into()))
}

/// `(maxSurge, maxUnavailable)` against the replicas: surge rounded up, unavailability
/// down, and one unavailable when both would be zero (`ResolveFenceposts`).
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    let n = replicas(d);
    let surge = scaled(&rolling_value(d, true), n, true).unwrap_or(0);
    let unavailable = scaled(&rolling_value(d, false), n, false).unwrap_or(0);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// How many may be unavailable: none for Recreate or no replicas, never above replicas.
pub fn max_unavailable(d: &Deployment) -> i32 {
    if is_recreate(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

pub fn max_surge(d: &Deployment) -> i32 {
    if is_recreate(d) { 0 } else { fenceposts(d).0 }
}

/// A template without the hash label, for comparisons.
fn without_hash(t: &PodTemplateSpec) -> PodTemplateSpec {
    let mut t = t.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(HASH_LABEL);
        if labels.is_empty()
            && let Some(m) = t.metadata.as_mut()
        {
            m.labels = None;
        }
    }
    t
}

/// Empty values dropped at every depth: `resources: {}` and no `resources` are one
/// template (Go clients such as `kubectl rollout undo` write the empty ones).
fn prune(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !prune(x));
            m.is_empty()
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                prune(x);
            }
            a.is_empty()
        }
        Value::Null => true,
        _ => false,
    }
}

/// A template without the hash label or empty values, as compared and hashed.
fn normalized(t: &PodTemplateSpec) -> serde_json::Value {
    let mut v = serde_json::to_value(without_hash(t)).unwrap_or_default();
    prune(&mut v);
    v
}

/// Whether two templates are the same but for the hash label (`EqualIgnoreHash`).
pub fn same_template(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    normalized(a) == normalized(b)
}

pub fn rs_template(rs: &ReplicaSet) -> PodTemplateSpec {
    rs.spec.template.clone().unwrap_or_default()
}

/// The hash naming a template's ReplicaSet: FNV-1a (32 bits) over its JSON and the
/// collision count, written in the consonants and digits Kubernetes' names use.
pub fn template_hash(t: &PodTemplateSpec, collisions: Option<i32>) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    feed(&serde_json::to_vec(&normalized(t)).unwrap_or_default());
    if let Some(c) = collisions {
        feed(&c.to_le_bytes());
    }
    const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| char::from(SAFE[usize::from(b) % SAFE.len()]))
        .collect()
}

/// The Deployment's annotations a ReplicaSet carries, with the rollout's own.
pub fn copied_annotations(d: &Deployment) -> BTreeMap<String, String> {
    let mut out = d.metadata.annotations.clone().unwrap_or_default();
    out.retain(|k, _| !NOT_COPIED.contains(&k.as_str()));
    out
}

pub fn sum(sets: &[Arc<ReplicaSet>], f: impl Fn(&ReplicaSet) -> i32) -> i32 {
    sets.iter().map(|rs| f(rs)).sum()
}

pub fn status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

pub fn ready(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

pub fn creation_ms(rs: &ReplicaSet) -> i64 {
    let t = rs.metadata.creation_timestamp.as_ref();
    t.map_or(0, |t| t.0.as_millisecond())
}

/// Oldest first (then by name), as the controller scales old ReplicaSets down.
pub fn by_age(sets: &mut [Arc<ReplicaSet>]) {
    sets.sort_by(|a, b| {
        (creation_ms(a), a.metadata.name.as_deref())
            .cmp(&(creation_ms(b), b.metadata.name.as_deref()))
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn d(strategy: serde_json::Value, replicas: i32) -> Deployment {
        serde_json::from_value(json!({"spec": {"replicas": replicas, "strategy": strategy,
            "selector": {}, "template": {}}}))
        .unwrap()
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        let rolling = |s: serde_json::Value, u: serde_json::Value| json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": s, "maxUnavailable": u}});
        assert_eq!(
            fenceposts(&d(rolling(json!("25%"), json!("25%")), 10)),
            (3, 2)
        );
        assert_eq!(fenceposts(&d(rolling(json!(0), json!("10%")), 5)), (0, 1));
        assert_eq!(fenceposts(&d(rolling(json!(2), json!(0)), 5)), (2, 0));
        assert_eq!(max_unavailable(&d(rolling(json!(0), json!(9)), 3)), 3);
        let recreate = d(json!({"type": "Recreate"}), 3);
        assert_eq!((max_surge(&recreate), max_unavailable(&recreate)), (0, 0));
    }

    #[test]
    fn the_hash_ignores_its_own_label_and_changes_with_the_template_and_collisions() {
        let t = |image: &str, hash: Option<&str>| -> PodTemplateSpec {
            let mut labels = json!({"app": "web"});
            if let Some(h) = hash {
                labels[HASH_LABEL] = h.into();
            }
            serde_json::from_value(json!({"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": image}]}}))
            .unwrap()
        };
        let a = template_hash(&t("x:1", None), None);
        assert_eq!(a, template_hash(&t("x:1", Some("abc")), None));
        assert_ne!(a, template_hash(&t("x:2", None), None));
        assert_ne!(a, template_hash(&t("x:1", None), Some(1)));
        assert!(
            a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{a}"
        );
        assert!(same_template(&t("x:1", None), &t("x:1", Some(&a))));
        let mut empty_resources = t("x:1", None);
        empty_resources.spec.as_mut().unwrap().containers[0].resources = Some(Default::default());
        assert!(same_template(&t("x:1", None), &empty_resources));
        assert_eq!(template_hash(&empty_resources, None), a);
        assert!(!same_template(&t("x:1", None), &t("x:2", None)));
    }
}
