//! No pod field is silently ignored: every field of the pod's types (as k8s-openapi's
//! `Deserialize` names them, so a new Kubernetes field shows up here on an upgrade) is
//! classified as honoured by the node, decided by the scheduler or the API server (nothing
//! for a node to do, as for the kubelet), without effect on this node (with why), or
//! refused; and each refusal is proven: a valid pod given that field is refused naming it.

use k8s_openapi::api::core::v1::*;
use serde_json::{Value, json};

use super::coverage_fields::fields;
use super::validate_pod;

#[derive(Debug)]
pub(super) enum Class {
    /// The node does what the field asks (other tests prove each).
    Honoured,
    /// The scheduler or the API server acts on it; a node has nothing to do.
    Cluster,
    /// It cannot change anything on podvisor's nodes, for the reason given.
    NoEffect(&'static str),
    /// Refused when set: this value must make a valid pod invalid, naming the field.
    Refused(Value),
    /// Honoured for some values, and this one refused (a `Localhost` seccomp profile, an
    /// unsafe sysctl): proven as a refusal, and walked into as honoured.
    Partly(Value),
}
use Class::*;

pub(super) struct Table {
    pub(super) name: &'static str,
    fields: Vec<&'static str>,
    /// Where the type sits in `base()`, as a JSON pointer.
    at: &'static str,
    pub(super) classes: Vec<(&'static str, Class)>,
}

/// A valid pod with one of everything the tables set fields of.
fn base() -> Value {
    json!({
        "metadata": {"name": "p"},
        "spec": {
            "securityContext": {},
            "affinity": {},
            "volumes": [
                {"name": "v", "emptyDir": {}},
                {"name": "p", "projected": {"sources": [
                    {"downwardAPI": {"items": []}}, {"serviceAccountToken": {"path": "t"}}
                ]}},
                {"name": "c", "configMap": {"name": "cm", "items": [{"key": "k", "path": "k"}]}},
                {"name": "s", "secret": {"secretName": "s"}},
                {"name": "d", "downwardAPI": {"items": [
                    {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}
                ]}}
            ],
            "containers": [{
                "name": "c", "image": "i",
                "securityContext": {},
                "resources": {},
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "livenessProbe": {"exec": {"command": ["true"]}},
                "readinessProbe": {"grpc": {"port": 9090}},
                "startupProbe": {"httpGet": {"port": 80}},
                "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}
            }],
            "ephemeralContainers": [{"name": "dbg", "image": "i", "securityContext": {}}]
        }
    })
}

fn pod_spec() -> Table {
    let h = |f| (f, Honoured);
    let c = |f| (f, Cluster);
    Table {
        name: "PodSpec",
        fields: fields::<PodSpec>(),
        at: "/spec",
        classes: vec![
            h("activeDeadlineSeconds"),
            h("affinity"),
            c("automountServiceAccountToken"),
            h("containers"),
            h("dnsConfig"),
            h("dnsPolicy"),
            h("enableServiceLinks"),
            h("ephemeralContainers"),
            h("hostAliases"),
            h("hostIPC"),
            h("hostNetwork"),
            h("hostPID"),
            ("hostUsers", Refused(json!(false))),
            h("hostname"),
            h("hostnameOverride"),
            h("imagePullSecrets"),
            h("initContainers"),
            h("nodeName"),
            h("nodeSelector"),
            ("os", Partly(json!({"name": "plan9"}))),
            ("overhead", Refused(json!({"cpu": "100m"}))),
            c("preemptionPolicy"),
            c("priority"),
            c("priorityClassName"),
            h("readinessGates"),
            ("resourceClaims", Refused(json!([{"name": "gpu"}]))),
            ("resources", Refused(json!({"limits": {"cpu": "1"}}))),
            h("restartPolicy"),
            ("runtimeClassName", Refused(json!("gvisor"))),
            c("schedulerName"),
            c("schedulingGates"),
            h("securityContext"),
            h("serviceAccount"),
            h("serviceAccountName"),
            h("setHostnameAsFQDN"),
            h("shareProcessNamespace"),
            h("subdomain"),
            h("terminationGracePeriodSeconds"),
            h("tolerations"),
            c("topologySpreadConstraints"),
            h("volumes"),
            c("schedulingGroup"),
            c("evictionResponders"),
        ],
    }
}

fn container() -> Table {
    let h = |f| (f, Honoured);
    let honoured = [
        "args",
        "command",
        "env",
        "envFrom",
        "image",
        "imagePullPolicy",
        "lifecycle",
        "livenessProbe",
        "name",
        "ports",
        "readinessProbe",
        "resizePolicy",
        "resources",
        "restartPolicy",
        "restartPolicyRules",
        "securityContext",
        "startupProbe",
        "stdin",
        "stdinOnce",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeMounts",
        "workingDir",
    ];
    let mut classes: Vec<(&str, Class)> = honoured.into_iter().map(h).collect();
    classes.push((
        "volumeDevices",
        Refused(json!([{"name": "v", "devicePath": "/dev/x"}])),
    ));
    Table {
        name: "Container",
        fields: fields::<Container>(),
        at: "/spec/containers/0",
        classes,
    }
}

fn ephemeral_container() -> Table {
    let h = |f| (f, Honoured);
    let honoured = [
        "args",
        "command",
        "env",
        "envFrom",
        "image",
        "imagePullPolicy",
        "name",
        "securityContext",
        "stdin",
        "stdinOnce",
        "targetContainerName",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeMounts",
        "workingDir",
    ];
    let mut classes: Vec<(&str, Class)> = honoured.into_iter().map(h).collect();
    let exec = json!({"exec": {"command": ["true"]}});
    classes.extend([
        ("ports", Refused(json!([{"containerPort": 80}]))),
        ("resources", Refused(json!({"limits": {"cpu": "1"}}))),
        (
            "resizePolicy",
            Refused(json!([{"resourceName": "cpu", "restartPolicy": "NotRequired"}])),
        ),
        ("livenessProbe", Refused(exec.clone())),
        ("readinessProbe", Refused(exec.clone())),
        ("startupProbe", Refused(exec.clone())),
        ("lifecycle", Refused(json!({"preStop": exec}))),
        ("restartPolicy", Refused(json!("Always"))),
        (
            "restartPolicyRules",
            Refused(json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}])),
        ),
        (
            "volumeDevices",
            Refused(json!([{"name": "v", "devicePath": "/dev/x"}])),
        ),
    ]);
    Table {
        name: "EphemeralContainer",
        fields: fields::<EphemeralContainer>(),
        at: "/spec/ephemeralContainers/0",
        classes,
    }
}

fn pod_security_context() -> Table {
    let h = |f| (f, Honoured);
    Table {
        name: "PodSecurityContext",
        fields: fields::<PodSecurityContext>(),
        at: "/spec/securityContext",
        classes: vec![
            h("appArmorProfile"),
            h("fsGroup"),
            (
                "fsGroupChangePolicy",
                NoEffect(
                    "podvisor sets fsGroup ownership once, when it makes a volume (OnRootMismatch)",
                ),
            ),
            h("runAsGroup"),
            h("runAsNonRoot"),
            h("runAsUser"),
            (
                "seLinuxChangePolicy",
                NoEffect("volumes are not relabelled: the runtime labels what it mounts"),
            ),
            h("seLinuxOptions"),
            (
                "seccompProfile",
                Partly(json!({"type": "Localhost", "localhostProfile": "p"})),
            ),
            h("supplementalGroups"),
            ("supplementalGroupsPolicy", Refused(json!("Strict"))),
            (
                "sysctls",
                Partly(json!([{"name": "Kernel..msgmax", "value": "1"}])),
            ),
            ("windowsOptions", Refused(json!({"runAsUserName": "x"}))),
        ],
    }
}

fn security_context() -> Table {
    let h = |f| (f, Honoured);
    Table {
        name: "SecurityContext",
        fields: fields::<SecurityContext>(),
        at: "/spec/containers/0/securityContext",
        classes: vec![
            h("allowPrivilegeEscalation"),
            h("appArmorProfile"),
            h("capabilities"),
            h("privileged"),
            ("procMount", Refused(json!("Unmasked"))),
            h("readOnlyRootFilesystem"),
            h("runAsGroup"),
            h("runAsNonRoot"),
            h("runAsUser"),
            h("seLinuxOptions"),
            (
                "seccompProfile",
                Partly(json!({"type": "Localhost", "localhostProfile": "p"})),
            ),
            ("windowsOptions", Refused(json!({"runAsUserName": "x"}))),
        ],
    }
}

fn volume() -> Table {
    let honoured = [
        "name",
        "emptyDir",
        "hostPath",
        "configMap",
        "secret",
        "downwardAPI",
        "projected",
    ];
    let fields = fields::<Volume>();
    let classes = fields
        .iter()
        .map(|f| match honoured.contains(f) {
            true => (*f, Honoured),
            false => (*f, Refused(json!({}))),
        })
        .collect();
    Table {
        name: "Volume",
        fields,
        at: "/spec/volumes/0",
        classes,
    }
}

fn volume_mount() -> Table {
    let h = |f| (f, Honoured);
    Table {
        name: "VolumeMount",
        fields: fields::<VolumeMount>(),
        at: "/spec/containers/0/volumeMounts/0",
        classes: vec![
            h("mountPath"),
            h("mountPropagation"),
            h("name"),
            h("readOnly"),
            ("recursiveReadOnly", Refused(json!("Enabled"))),
            h("subPath"),
            ("subPathExpr", Refused(json!("$(POD_NAME)"))),
            ("bindMountOptions", Refused(json!(["noexec"]))),
        ],
    }
}

fn small_tables() -> Vec<Table> {
    let h = |f| (f, Honoured);
    vec![
        Table {
            name: "ResourceRequirements",
            fields: fields::<ResourceRequirements>(),
            at: "/spec/containers/0/resources",
            classes: vec![
                ("claims", Refused(json!([{"name": "gpu"}]))),
                h("limits"),
                h("requests"),
            ],
        },
        Table {
            name: "EnvVarSource",
            fields: fields::<EnvVarSource>(),
            at: "/spec/containers/0/env/0/valueFrom",
            classes: vec![
                h("configMapKeyRef"),
                h("fieldRef"),
                (
                    "fileKeyRef",
                    Refused(json!({"path": "f", "key": "k", "volumeName": "v"})),
                ),
                h("resourceFieldRef"),
                h("secretKeyRef"),
            ],
        },
        Table {
            name: "EmptyDirVolumeSource",
            fields: fields::<EmptyDirVolumeSource>(),
            at: "/spec/volumes/0/emptyDir",
            classes: vec![h("medium"), h("sizeLimit"), ("mode", Refused(json!(493)))],
        },
        Table {
            name: "Lifecycle",
            fields: fields::<Lifecycle>(),
            at: "/spec/containers/0/lifecycle",
            classes: vec![
                h("postStart"),
                h("preStop"),
                ("stopSignal", Refused(json!("SIGUSR1"))),
            ],
        },
        Table {
            name: "Probe",
            fields: fields::<Probe>(),
            at: "/spec/containers/0/livenessProbe",
            classes: [
                "exec",
                "failureThreshold",
                "grpc",
                "httpGet",
                "initialDelaySeconds",
                "periodSeconds",
                "successThreshold",
                "tcpSocket",
                "terminationGracePeriodSeconds",
                "timeoutSeconds",
            ]
            .into_iter()
            .map(h)
            .collect(),
        },
        Table {
            name: "LifecycleHandler",
            fields: fields::<LifecycleHandler>(),
            at: "/spec/containers/0/lifecycle/preStop",
            classes: vec![
                h("exec"),
                h("httpGet"),
                h("sleep"),
                ("tcpSocket", Refused(json!({"port": 80}))),
            ],
        },
        Table {
            name: "VolumeProjection",
            fields: fields::<VolumeProjection>(),
            at: "/spec/volumes/1/projected/sources/0",
            classes: vec![
                h("configMap"),
                h("downwardAPI"),
                h("secret"),
                h("serviceAccountToken"),
                (
                    "clusterTrustBundle",
                    Refused(json!({"path": "b", "signerName": "x.io/y"})),
                ),
                (
                    "podCertificate",
                    Refused(json!({"signerName": "x.io/y", "keyType": "ED25519"})),
                ),
            ],
        },
        Table {
            name: "Affinity",
            fields: fields::<Affinity>(),
            at: "/spec/affinity",
            classes: vec![
                h("nodeAffinity"),
                ("podAffinity", Cluster),
                ("podAntiAffinity", Cluster),
            ],
        },
    ]
}

/// Types whose 1.37 alpha fields are refused (`alpha.rs`), each where `base()` has one.
fn alpha_tables() -> Vec<Table> {
    let h = |f| (f, Honoured);
    let user = || Refused(json!(1000));
    let table = |name, fields, at, classes| Table {
        name,
        fields,
        at,
        classes,
    };
    vec![
        table(
            "ConfigMapVolumeSource",
            fields::<ConfigMapVolumeSource>(),
            "/spec/volumes/2/configMap",
            vec![
                h("defaultMode"),
                h("items"),
                h("name"),
                h("optional"),
                ("defaultUser", user()),
            ],
        ),
        table(
            "KeyToPath",
            fields::<KeyToPath>(),
            "/spec/volumes/2/configMap/items/0",
            vec![h("key"), h("mode"), h("path"), ("user", user())],
        ),
        table(
            "SecretVolumeSource",
            fields::<SecretVolumeSource>(),
            "/spec/volumes/3/secret",
            vec![
                h("defaultMode"),
                h("items"),
                h("optional"),
                h("secretName"),
                ("defaultUser", user()),
            ],
        ),
        table(
            "DownwardAPIVolumeSource",
            fields::<DownwardAPIVolumeSource>(),
            "/spec/volumes/4/downwardAPI",
            vec![h("defaultMode"), h("items"), ("defaultUser", user())],
        ),
        table(
            "DownwardAPIVolumeFile",
            fields::<DownwardAPIVolumeFile>(),
            "/spec/volumes/4/downwardAPI/items/0",
            vec![
                h("fieldRef"),
                h("mode"),
                h("path"),
                h("resourceFieldRef"),
                ("user", user()),
            ],
        ),
        table(
            "ProjectedVolumeSource",
            fields::<ProjectedVolumeSource>(),
            "/spec/volumes/1/projected",
            vec![h("defaultMode"), h("sources"), ("defaultUser", user())],
        ),
        table(
            "ServiceAccountTokenProjection",
            fields::<ServiceAccountTokenProjection>(),
            "/spec/volumes/1/projected/sources/1/serviceAccountToken",
            vec![
                h("audience"),
                h("expirationSeconds"),
                h("path"),
                ("user", user()),
            ],
        ),
        table(
            "GRPCAction",
            fields::<GRPCAction>(),
            "/spec/containers/0/readinessProbe/grpc",
            vec![h("port"), h("service"), ("mode", Partly(json!("TLS")))],
        ),
        table(
            "HTTPGetAction",
            fields::<HTTPGetAction>(),
            "/spec/containers/0/startupProbe/httpGet",
            vec![
                h("host"),
                h("httpHeaders"),
                h("path"),
                h("port"),
                h("scheme"),
                ("protocol", Partly(json!("HTTP/2"))),
            ],
        ),
    ]
}

pub(super) fn tables() -> Vec<Table> {
    let mut t = vec![
        pod_spec(),
        container(),
        ephemeral_container(),
        pod_security_context(),
        security_context(),
        volume(),
        volume_mount(),
    ];
    t.extend(small_tables());
    t.extend(alpha_tables());
    t
}

#[test]
fn every_field_of_the_pod_s_types_is_classified() {
    let mut problems = Vec::new();
    for t in tables() {
        let classified: Vec<&str> = t.classes.iter().map(|(f, _)| *f).collect();
        for f in &t.fields {
            if !classified.contains(f) {
                problems.push(format!("{}.{f}: new, neither honoured nor refused", t.name));
            }
        }
        for f in &classified {
            if !t.fields.contains(f) {
                problems.push(format!(
                    "{}.{f}: classified, but the type has no such field",
                    t.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `/spec/containers/0/x` → `spec.containers[0].x`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.trim_start_matches('/').split('/') {
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

#[test]
fn every_refusal_is_made_naming_the_field() {
    let pod: Pod = serde_json::from_value(base()).unwrap();
    assert_eq!(validate_pod(&pod), Ok(()), "the base pod is valid");
    let mut problems = Vec::new();
    for t in tables() {
        for (field, class) in &t.classes {
            let (Refused(sample) | Partly(sample)) = class else {
                continue;
            };
            let mut v = base();
            let target = v.pointer_mut(t.at).unwrap();
            if t.name == "Volume" {
                *target = json!({"name": "v", *field: sample});
            } else if t.name == "VolumeProjection" {
                *target = json!({*field: sample});
            } else {
                target[*field] = sample.clone();
            }
            let pod: Pod = serde_json::from_value(v).unwrap();
            let at = dotted(t.at);
            let named = validate_pod(&pod).err().is_some_and(|errs| {
                errs.0
                    .iter()
                    .any(|e| e.field == at || e.field.starts_with(&format!("{at}.{field}")))
            });
            if !named {
                problems.push(format!("{}.{field} = {sample} is not refused", t.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn what_has_no_effect_says_why() {
    for t in tables() {
        for (f, class) in &t.classes {
            if let NoEffect(why) = class {
                assert!(why.len() > 20, "{}.{f}", t.name);
            }
        }
    }
}
