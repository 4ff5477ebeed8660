//! A pod's quality-of-service class, as the kubelet computes it (`GetPodQOS`) from its
//! containers' CPU and memory requests and limits: `Guaranteed` when every container limits
//! both and requests what it limits, `BestEffort` when none requests or limits either,
//! `Burstable` otherwise.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::{PodExt, quantity};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Guaranteed => "Guaranteed",
            Self::Burstable => "Burstable",
            Self::BestEffort => "BestEffort",
        }
    }
}

const RESOURCES: [&str; 2] = ["cpu", "memory"];

fn amount(resource: &str, q: &str) -> i64 {
    let parsed = if resource == "cpu" {
        quantity::parse_milli(q)
    } else {
        quantity::parse_units(q)
    };
    parsed.unwrap_or(0)
}

/// The container's (request, limit) of `resource`, a missing request being its limit (the
/// API's defaulting).
pub(crate) fn pair(c: &Container, resource: &str) -> (i64, Option<i64>) {
    let r = c.resources.as_ref();
    let get = |m: Option<&std::collections::BTreeMap<String, _>>| {
        m.and_then(|m| m.get(resource)).map(
            |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| amount(resource, &q.0),
        )
    };
    let limit = get(r.and_then(|r| r.limits.as_ref())).filter(|l| *l > 0);
    let request = get(r.and_then(|r| r.requests.as_ref()))
        .or(limit)
        .unwrap_or(0);
    (request, limit)
}

/// The pod's limit of `resource` (milli-CPU or bytes), as the kubelet sets it on the pod's
/// cgroup: none unless every container has one; then the regular containers' sum, or the
/// largest init container's if that is more.
pub fn pod_limit(pod: &Pod, resource: &str) -> Option<i64> {
    let mut apps: i64 = 0;
    for c in pod.containers() {
        apps = apps.saturating_add(pair(c, resource).1?);
    }
    let mut init: i64 = 0;
    for c in pod.init_containers() {
        init = init.max(pair(c, resource).1?);
    }
    Some(apps.max(init))
}

pub fn qos_class(pod: &Pod) -> QosClass {
    let containers: Vec<&Container> = pod
        .init_containers()
        .iter()
        .chain(pod.containers())
        .collect();
    let pairs: Vec<(i64, Option<i64>)> = containers
        .iter()
        .flat_map(|c| RESOURCES.map(|r| pair(c, r)))
        .collect();
    if pairs.iter().all(|(req, lim)| *req == 0 && lim.is_none()) {
        return QosClass::BestEffort;
    }
    if pairs.iter().all(|(req, lim)| *lim == Some(*req)) {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"spec": {"containers": containers}})).unwrap()
    }

    #[test]
    fn classes_as_the_kubelet_gives_them() {
        let none = pod(serde_json::json!([{"name": "a"}, {"name": "b"}]));
        assert_eq!(qos_class(&none), QosClass::BestEffort);
        let limits_only = pod(serde_json::json!([{"name": "a", "resources": {
            "limits": {"cpu": "500m", "memory": "64Mi"}}}]));
        assert_eq!(qos_class(&limits_only), QosClass::Guaranteed);
        let equal = pod(serde_json::json!([{"name": "a", "resources": {
            "requests": {"cpu": "0.5", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "67108864"}}}]));
        assert_eq!(qos_class(&equal), QosClass::Guaranteed);
        let less = pod(serde_json::json!([{"name": "a", "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "64Mi"}}}]));
        assert_eq!(qos_class(&less), QosClass::Burstable);
        let one_bare = pod(serde_json::json!([
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b"}]));
        assert_eq!(qos_class(&one_bare), QosClass::Burstable);
        let cpu_only =
            pod(serde_json::json!([{"name": "a", "resources": {"requests": {"cpu": "1"}}}]));
        assert_eq!(qos_class(&cpu_only), QosClass::Burstable);
    }
}
