//! The order a pod's containers stop in (the kubelet's termination ordering for native
//! sidecars): every container that is not a sidecar stops at once; a sidecar waits until
//! those have stopped and the sidecars after it in the spec too, so sidecars stop last,
//! in reverse order.

use std::collections::HashMap;

use podvisor_core::PodExt;
use podvisor_core::restart::is_sidecar;

/// For each container of `stopping` that must wait, the containers (also stopping) it
/// waits for.
pub(crate) fn stop_order(pod: &impl PodExt, stopping: &[&str]) -> HashMap<String, Vec<String>> {
    let sidecars: Vec<&str> = pod
        .init_containers()
        .iter()
        .filter(|c| is_sidecar(c))
        .map(|c| c.name.as_str())
        .filter(|n| stopping.contains(n))
        .collect();
    if sidecars.is_empty() {
        return HashMap::new();
    }
    let others: Vec<String> = stopping
        .iter()
        .filter(|n| !sidecars.contains(n))
        .map(|n| n.to_string())
        .collect();
    sidecars
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let later = sidecars[i + 1..].iter().map(|n| n.to_string());
            (s.to_string(), others.iter().cloned().chain(later).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn sidecars_stop_after_the_rest_and_in_reverse_order() {
        let pod: Pod = serde_json::from_value(serde_json::json!({"spec": {
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always"},
                {"name": "setup"},
                {"name": "logs", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "app"}, {"name": "worker"}]
        }}))
        .unwrap();
        let o = stop_order(&pod, &["app", "worker", "proxy", "logs"]);
        assert_eq!(o["logs"], ["app", "worker"]);
        assert_eq!(o["proxy"], ["app", "worker", "logs"]);
        assert!(!o.contains_key("app") && !o.contains_key("worker"));
        // Only what is stopping counts; without sidecars, nobody waits.
        assert_eq!(stop_order(&pod, &["proxy"])["proxy"], Vec::<String>::new());
        assert!(stop_order(&pod, &["app"]).is_empty());
    }
}
