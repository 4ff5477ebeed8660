use super::*;

fn pod(json: serde_json::Value) -> Pod {
    serde_json::from_value(json).unwrap()
}

#[test]
fn baseline_refuses_host_access_and_privilege_and_names_each() {
    let p = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {
            "hostNetwork": true,
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}, {"name": "d", "emptyDir": {}}],
            "containers": [{
                "name": "c", "image": "i",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "securityContext": {
                    "privileged": true,
                    "capabilities": {"add": ["NET_BIND_SERVICE", "SYS_ADMIN"]},
                    "seccompProfile": {"type": "Unconfined"}
                },
                "livenessProbe": {"httpGet": {"host": "169.254.169.254", "port": 80}}
            }]
        }
    }));
    assert_eq!(violations(&p, Level::Privileged), Vec::<String>::new());
    let found = violations(&p, Level::Baseline);
    assert_eq!(
        found,
        [
            "host namespaces (hostNetwork=true)",
            "hostPath volumes (volume \"root\")",
            "privileged (container \"c\" must not set securityContext.privileged=true)",
            "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add)",
            "hostPort (container \"c\" uses hostPort 8080)",
            "seccompProfile (container \"c\" must not set securityContext.seccompProfile.type to \"Unconfined\")",
            "probe or lifecycle host (container \"c\" uses probe or lifecycle host \"169.254.169.254\")",
        ]
    );
}

#[test]
fn restricted_asks_for_a_hardened_pod_and_passes_one() {
    let loose = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}
    }));
    assert!(violations(&loose, Level::Baseline).is_empty());
    let found = violations(&loose, Level::Restricted);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(found[0].starts_with("allowPrivilegeEscalation != false"));
    let hardened = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "d", "emptyDir": {}}],
            "containers": [{
                "name": "c", "image": "i",
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}
                }
            }]
        }
    }));
    assert_eq!(
        violations(&hardened, Level::Restricted),
        Vec::<String>::new()
    );
}

#[test]
fn an_unknown_level_fails_closed() {
    assert_eq!(Level::of_label("privileged"), Level::Privileged);
    assert_eq!(Level::of_label("baseline"), Level::Baseline);
    assert_eq!(Level::of_label("Privileged "), Level::Restricted);
}
