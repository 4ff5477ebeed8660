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

#[test]
fn baseline_refuses_every_probe_and_hook_host_the_loopback_included() {
    for host in ["127.0.0.1", "::1", "localhost", "10.0.0.1"] {
        let p = pod(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{
                "name": "c", "image": "i",
                "readinessProbe": {"tcpSocket": {"host": host, "port": 9740}},
                "lifecycle": {"preStop": {"httpGet": {"host": host, "port": 80}}}
            }]}
        }));
        let want = format!(
            "probe or lifecycle host (container \"c\" uses probe or lifecycle host {host:?})"
        );
        assert_eq!(violations(&p, Level::Baseline), [want], "{host}");
    }
    let empty = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{
            "name": "c", "image": "i",
            "livenessProbe": {"httpGet": {"host": "", "port": 80}}
        }]}
    }));
    assert!(violations(&empty, Level::Baseline).is_empty());
}

#[test]
fn restricted_allows_the_standards_volume_types() {
    let p = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [
                {"name": "a", "configMap": {"name": "x"}},
                {"name": "b", "secret": {"secretName": "x"}},
                {"name": "c", "projected": {"sources": []}},
                {"name": "d", "downwardAPI": {}},
                {"name": "e", "emptyDir": {}},
                {"name": "f", "nfs": {"server": "s", "path": "/"}}
            ],
            "containers": [{
                "name": "c", "image": "i",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
            }]
        }
    }));
    assert_eq!(
        violations(&p, Level::Restricted),
        ["restricted volume types (volume \"f\")"]
    );
}

#[test]
fn baseline_allows_the_runtimes_selinux_types_only() {
    let p = pod(serde_json::json!({
        "metadata": {"name": "p"},
        "spec": {
            "securityContext": {"seLinuxOptions": {"level": "s0:c1,c2"}},
            "containers": [
                {"name": "ok", "image": "i", "securityContext": {"seLinuxOptions": {"type": "container_init_t"}}},
                {"name": "bad", "image": "i", "securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "system_u"}}}
            ]
        }
    }));
    assert_eq!(
        violations(&p, Level::Baseline),
        [
            "seLinuxOptions (container \"bad\" set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set)"
        ]
    );
}
