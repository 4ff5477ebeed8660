use super::*;
use serde_json::json;

fn node(labels: serde_json::Value, taints: serde_json::Value) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": labels},
        "spec": {"taints": taints}
    }))
    .unwrap()
}

fn pod(spec: serde_json::Value) -> Pod {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "i"}]);
    }
    serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
}

fn reason(p: &Pod, n: &Node, active: &[&Pod]) -> Option<&'static str> {
    admit(p, n, active).err().map(|r| r.reason)
}

#[test]
fn a_node_selector_must_match_the_node_s_labels() {
    let n = node(json!({"disk": "ssd"}), json!([]));
    assert_eq!(
        reason(&pod(json!({"nodeSelector": {"disk": "ssd"}})), &n, &[]),
        None
    );
    let wrong = pod(json!({"nodeSelector": {"disk": "hdd"}}));
    let r = admit(&wrong, &n, &[]).unwrap_err();
    assert_eq!(r.reason, "NodeAffinity");
    assert!(
        r.message
            .starts_with("Pod was rejected: Predicate NodeAffinity failed"),
        "{}",
        r.message
    );
}

#[test]
fn required_affinity_terms_are_ored_and_their_requirements_anded() {
    let n = node(json!({"zone": "a", "gen": "5"}), json!([]));
    let affinity = |terms: serde_json::Value| {
        pod(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}))
    };
    let zone_b = json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]});
    let gen_gt_4 = json!({"matchExpressions": [
        {"key": "gen", "operator": "Gt", "values": ["4"]},
        {"key": "gpu", "operator": "DoesNotExist"}]});
    let by_name =
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]});
    assert_eq!(
        reason(&affinity(json!([zone_b.clone(), gen_gt_4])), &n, &[]),
        None
    );
    assert_eq!(reason(&affinity(json!([by_name])), &n, &[]), None);
    assert_eq!(
        reason(&affinity(json!([zone_b])), &n, &[]),
        Some("NodeAffinity")
    );
    assert_eq!(
        reason(&affinity(json!([{}])), &n, &[]),
        Some("NodeAffinity"),
        "an empty term matches nothing"
    );
    let not_in =
        json!([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]);
    assert_eq!(reason(&affinity(not_in), &n, &[]), Some("NodeAffinity"));
}

#[test]
fn a_host_port_held_by_an_active_pod_is_refused() {
    let n = node(json!({}), json!([]));
    let with_port = |ip: &str, proto: &str| {
        pod(json!({"containers": [{"name": "c", "image": "i",
            "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": ip, "protocol": proto}]}]}))
    };
    let holder = with_port("", "TCP");
    assert_eq!(
        reason(&with_port("127.0.0.1", "TCP"), &n, &[&holder]),
        Some("NodePorts")
    );
    assert_eq!(
        reason(&with_port("", "UDP"), &n, &[&holder]),
        None,
        "another protocol"
    );
    let specific = with_port("10.0.0.1", "TCP");
    assert_eq!(
        reason(&with_port("10.0.0.2", "TCP"), &n, &[&specific]),
        None,
        "another address"
    );
}

#[test]
fn only_untolerated_no_execute_taints_refuse_a_bound_pod() {
    let n = node(
        json!({}),
        json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    );
    assert_eq!(
        reason(&pod(json!({})), &n, &[]),
        None,
        "NoSchedule is the scheduler's"
    );
    let n = node(
        json!({}),
        json!([{"key": "k", "value": "v", "effect": "NoExecute"}]),
    );
    assert_eq!(reason(&pod(json!({})), &n, &[]), Some("TaintToleration"));
    let tolerant = pod(json!({"tolerations": [{"key": "k", "operator": "Exists"}]}));
    assert_eq!(reason(&tolerant, &n, &[]), None);
}

#[test]
fn an_unsafe_sysctl_or_another_os_is_refused_by_the_node_with_the_kubelet_s_reason() {
    let n = node(json!({}), json!([]));
    let unsafe_sysctl = pod(json!({"securityContext": {"sysctls": [
        {"name": "kernel.shm_rmid_forced", "value": "1"},
        {"name": "kernel.msgmax", "value": "10000000000"}]}}));
    let r = admit(&unsafe_sysctl, &n, &[]).unwrap_err();
    assert_eq!(r.reason, "SysctlForbidden");
    assert_eq!(
        r.message,
        "forbidden sysctl: \"kernel.msgmax\" not allowlisted"
    );
    let slashes = pod(
        json!({"securityContext": {"sysctls": [{"name": "kernel/shm_rmid_forced", "value": "1"}]}}),
    );
    assert_eq!(reason(&slashes, &n, &[]), None);
    let windows = pod(json!({"os": {"name": "windows"}}));
    assert_eq!(reason(&windows, &n, &[]), Some("PodOSNotSupported"));
    // The same for every pod of the node, static ones included.
    let room = crate::fit::Allocatable {
        pods: 10,
        cpu_milli: 1000,
        memory_bytes: 1 << 30,
    };
    let r = crate::fit::admit(&windows, &[], &room);
    assert_eq!(r.unwrap_err().reason, "PodOSNotSupported");
}
