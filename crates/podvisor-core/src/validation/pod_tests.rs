use k8s_openapi::api::core::v1::Pod;

use super::*;

fn pod(yaml: &str) -> Pod {
    serde_json::from_value(serde_json::from_str(yaml).unwrap()).unwrap()
}

#[test]
fn every_problem_is_reported_with_its_field_path() {
    let p = pod(r#"{
        "metadata": {"name": "Web_Server"},
        "spec": {
            "restartPolicy": "Sometimes",
            "volumes": [{"name": "d", "nfs": {"server": "x", "path": "/"}}],
            "initContainers": [{"name": "app", "image": "i"}],
            "containers": [{
                "name": "app",
                "ports": [{"containerPort": 70000}],
                "resources": {"requests": {"cpu": "lots"}},
                "volumeMounts": [{"name": "nope", "mountPath": "rel", "subPath": "../x"}],
                "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]
            }]
        }
    }"#);
    let errs = validate_pod(&p).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.restartPolicy",
            "spec.volumes[0]",
            "spec.containers[0].image",
            "spec.containers[0].ports[0].containerPort",
            "spec.containers[0].resources.requests[cpu]",
            "spec.containers[0].volumeMounts[0].name",
            "spec.containers[0].volumeMounts[0].mountPath",
            "spec.containers[0].volumeMounts[0].subPath",
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
            "spec.containers[0].name",
        ]
    );
    let kinds: Vec<&str> = errs.0.iter().map(|e| e.kind.reason()).collect();
    assert_eq!(kinds[2], "FieldValueForbidden");
    assert_eq!(kinds[10], "FieldValueDuplicate");
    assert!(
        errs.to_string()
            .contains("volumeMounts[0].name: Not found: \"nope\""),
        "{errs}"
    );
}

#[test]
fn a_valid_pod_passes_and_a_missing_spec_is_required() {
    let ok = pod(r#"{"metadata": {"name": "web", "namespace": "apps"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}],
                 "terminationGracePeriodSeconds": 0}}"#);
    assert_eq!(validate_pod(&ok), Ok(()));
    let none = pod(r#"{"metadata": {"name": "web"}}"#);
    assert_eq!(
        validate_pod(&none).unwrap_err().to_string(),
        "spec: Required value"
    );
    let grace = pod(r#"{"metadata": {"name": "web"},
        "spec": {"containers": [{"name": "app", "image": "b"}],
                 "terminationGracePeriodSeconds": 9223372036854775807}}"#);
    let e = validate_pod(&grace).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("spec.terminationGracePeriodSeconds: Invalid value"),
        "{e}"
    );
}

#[test]
fn probes_hooks_and_restart_rules_are_checked_where_they_may_be() {
    let p = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "terminationGracePeriodSeconds": 10,
            "readinessGates": [{"conditionType": "example.com/ok"}],
            "initContainers": [
                {"name": "setup", "image": "i", "readinessProbe": {"exec": {"command": ["true"]}}},
                {"name": "proxy", "image": "i", "restartPolicy": "Always",
                 "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}],
                 "startupProbe": {"tcpSocket": {"port": 15000}, "successThreshold": 1}}
            ],
            "containers": [{
                "name": "app", "image": "i",
                "ports": [{"name": "http", "containerPort": 8080}],
                "livenessProbe": {"httpGet": {"port": "http", "scheme": "FTP"}, "successThreshold": 2,
                                  "exec": {"command": ["true"]}},
                "readinessProbe": {"tcpSocket": {"port": "grpc"}, "terminationGracePeriodSeconds": 5},
                "startupProbe": {"periodSeconds": -1, "grpc": {"port": 0}},
                "lifecycle": {
                    "postStart": {"tcpSocket": {"port": 80}},
                    "preStop": {"sleep": {"seconds": 11}},
                    "stopSignal": "SIGUSR1"
                },
                "restartPolicy": "Never",
                "restartPolicyRules": [{"action": "Delete", "exitCodes": {"operator": "Above"}},
                                       {"action": "Restart"}]
            }]
        }
    }"#);
    let errs = validate_pod(&p).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.initContainers[0].readinessProbe",
            "spec.initContainers[1].restartPolicyRules",
            "spec.containers[0].restartPolicyRules[0].action",
            "spec.containers[0].restartPolicyRules[0].exitCodes.operator",
            "spec.containers[0].restartPolicyRules[1].exitCodes",
            "spec.containers[0].livenessProbe.successThreshold",
            "spec.containers[0].livenessProbe.httpGet",
            "spec.containers[0].livenessProbe.httpGet.scheme",
            "spec.containers[0].readinessProbe.terminationGracePeriodSeconds",
            "spec.containers[0].readinessProbe.tcpSocket.port",
            "spec.containers[0].startupProbe.periodSeconds",
            "spec.containers[0].startupProbe.grpc.port",
            "spec.containers[0].lifecycle.postStart.tcpSocket",
            "spec.containers[0].lifecycle.preStop.sleep.seconds",
            "spec.containers[0].lifecycle.stopSignal",
        ],
        "{errs}"
    );
    let text = errs.to_string();
    for words in [
        "may not be set for init containers without restartPolicy=Always",
        "not allowed for init containers with restart policy Always",
        "may not specify more than 1 handler type",
        "port \"grpc\" not found in the container's ports",
        "must be non-negative and less than terminationGracePeriodSeconds (10)",
        "containerd 1.6 and 1.7 take none through CRI",
    ] {
        assert!(text.contains(words), "{words:?} missing from:\n{text}");
    }
}

#[test]
fn probes_and_hooks_kubernetes_accepts_pass() {
    let ok = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "proxy", "image": "i", "restartPolicy": "Always",
                "startupProbe": {"httpGet": {"port": 15021, "path": "/ready"}, "failureThreshold": 30},
                "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}}}],
            "containers": [{
                "name": "app", "image": "i",
                "ports": [{"name": "http", "containerPort": 8080}],
                "livenessProbe": {"httpGet": {"port": "http", "scheme": "HTTPS",
                    "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                    "terminationGracePeriodSeconds": 3, "successThreshold": 0},
                "readinessProbe": {"grpc": {"port": 9090, "service": "app"}, "successThreshold": 3},
                "lifecycle": {"postStart": {"sleep": {"seconds": 0}},
                              "preStop": {"httpGet": {"port": 8080, "path": "/quit"}}},
                "restartPolicy": "Never",
                "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
            }]
        }
    }"#);
    assert_eq!(validate_pod(&ok), Ok(()));
}

#[test]
fn security_contexts_podvisor_cannot_honour_are_refused_with_the_reason() {
    let p = pod(r#"{
        "metadata": {"name": "sec"},
        "spec": {
            "hostUsers": false,
            "securityContext": {
                "seccompProfile": {"type": "Localhost", "localhostProfile": "x.json"},
                "sysctls": [
                    {"name": "net/ipv4/ip_unprivileged_port_start", "value": "0"},
                    {"name": "kernel.msgmax", "value": "1"}
                ]
            },
            "containers": [{
                "name": "app", "image": "i",
                "securityContext": {
                    "procMount": "Unmasked",
                    "capabilities": {"add": ["NET_ADMIN", "sys admin"], "drop": ["ALL"]},
                    "appArmorProfile": {"type": "Localhost"},
                    "privileged": true,
                    "allowPrivilegeEscalation": false,
                    "runAsNonRoot": true,
                    "runAsUser": 0
                }
            }]
        }
    }"#);
    let errs = validate_pod(&p).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.hostUsers",
            "spec.securityContext.seccompProfile.type",
            "spec.containers[0].securityContext.appArmorProfile.localhostProfile",
            "spec.containers[0].securityContext.capabilities.add[1]",
            "spec.containers[0].securityContext.allowPrivilegeEscalation",
            "spec.containers[0].securityContext.procMount",
        ]
    );
    let text = errs.to_string();
    // runAsNonRoot with runAsUser 0 is the node's to refuse at container creation, as
    // the kubelet does: the API admits it.
    assert!(!text.contains("runAsUser"), "{text}");
    assert!(
        !text.contains("kernel.msgmax"),
        "the node's to refuse: {text}"
    );
    assert!(text.contains("user namespace"), "{text}");
    // What podvisor honours passes.
    let ok = pod(r#"{
        "metadata": {"name": "sec"},
        "spec": {
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000,
                "supplementalGroups": [3000],
                "seccompProfile": {"type": "RuntimeDefault"},
                "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]
            },
            "containers": [{
                "name": "app", "image": "i",
                "securityContext": {
                    "procMount": "Default",
                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                    "appArmorProfile": {"type": "Unconfined"},
                    "allowPrivilegeEscalation": false
                }
            }]
        }
    }"#);
    assert_eq!(validate_pod(&ok), Ok(()));
    // A net sysctl on the node's own network namespace is refused.
    let host = pod(r#"{"metadata": {"name": "h"}, "spec": {"hostNetwork": true,
        "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
        "containers": [{"name": "app", "image": "i"}]}}"#);
    assert!(
        validate_pod(&host)
            .unwrap_err()
            .to_string()
            .contains("hostNetwork")
    );
}

#[test]
fn object_volumes_and_env_sources_pass_and_what_podvisor_cannot_honour_is_named() {
    let good = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "volumes": [
                {"name": "c", "configMap": {"name": "x", "items": [{"key": "k", "path": "a/b"}]}},
                {"name": "s", "secret": {"secretName": "x", "defaultMode": 256}},
                {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "p", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {"configMap": {"name": "kube-root-ca.crt"}}
                ]}},
                {"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
            ],
            "containers": [{
                "name": "app", "image": "i",
                "envFrom": [{"configMapRef": {"name": "x"}, "prefix": "P_"}],
                "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}},
                    {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a']"}}},
                    {"name": "C", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}
                ]
            }]
        }
    }"#);
    assert_eq!(validate_pod(&good), Ok(()));
    let bad = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "volumes": [
                {"name": "c", "configMap": {"name": "x", "items": [{"key": "k", "path": "../b"}]}},
                {"name": "d", "downwardAPI": {"items": [{"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}]}},
                {"name": "p", "projected": {"sources": [{"clusterTrustBundle": {"path": "b"}}]}},
                {"name": "e", "emptyDir": {"sizeLimit": "-1Gi"}}
            ],
            "containers": [{
                "name": "app", "image": "i",
                "envFrom": [{"prefix": "P_"}],
                "env": [{"name": "A", "valueFrom": {"fileKeyRef": {"path": "f", "key": "k", "volumeName": "c"}}}]
            }]
        }
    }"#);
    let errs = validate_pod(&bad).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.volumes[0].configMap.items[0].path",
            "spec.volumes[1].downwardAPI.items[0].fieldRef.fieldPath",
            "spec.volumes[2].projected.sources[0].clusterTrustBundle",
            "spec.volumes[3].emptyDir.sizeLimit",
            "spec.containers[0].env[0].valueFrom.fileKeyRef",
            "spec.containers[0].envFrom[0]",
        ]
    );
}

#[test]
fn dns_settings_and_host_aliases_are_checked() {
    let p = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "dnsPolicy": "None",
            "dnsConfig": {"searches": ["a"], "options": [{"name": ""}]},
            "hostAliases": [{"ip": "not-an-ip", "hostnames": ["x"]}, {"ip": "::1"}],
            "containers": [{"name": "app", "image": "i"}]
        }
    }"#);
    let errs = validate_pod(&p).unwrap_err();
    let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.dnsConfig.nameservers",
            "spec.dnsConfig.options[0].name",
            "spec.hostAliases[0].ip",
            "spec.hostAliases[1].hostnames",
        ]
    );
    let ok = pod(r#"{
        "metadata": {"name": "web"},
        "spec": {
            "dnsPolicy": "None",
            "dnsConfig": {"nameservers": ["192.0.2.53"], "options": [{"name": "ndots", "value": "2"}]},
            "hostAliases": [{"ip": "192.0.2.9", "hostnames": ["foo.local"]}],
            "containers": [{"name": "app", "image": "i"}]
        }
    }"#);
    assert_eq!(validate_pod(&ok), Ok(()));
}

#[test]
fn a_hostname_override_is_a_subdomain_without_fqdn_or_host_network() {
    let with = |extra: &str| {
        pod(&format!(
            r#"{{"metadata": {{"name": "h"}}, "spec": {{{extra} "containers": [{{"name": "c", "image": "i"}}]}}}}"#
        ))
    };
    assert!(validate_pod(&with(r#""hostnameOverride": "override.example.host","#)).is_ok());
    let fields = |p: &Pod| -> Vec<String> {
        validate_pod(p)
            .unwrap_err()
            .0
            .iter()
            .map(|e| e.to_string())
            .collect()
    };
    let e = fields(&with(r#""hostnameOverride": "Not_A_Name","#));
    assert!(
        e[0].starts_with("spec.hostnameOverride: Invalid value"),
        "{e:?}"
    );
    let e = fields(&with(
        r#""hostnameOverride": "h", "setHostnameAsFQDN": true,"#,
    ));
    assert!(
        e[0].contains("may not be specified when setHostnameAsFQDN is true"),
        "{e:?}"
    );
    let e = fields(&with(r#""hostnameOverride": "h", "hostNetwork": true,"#));
    assert!(
        e[0].contains("may not be specified when hostNetwork is true"),
        "{e:?}"
    );
}
