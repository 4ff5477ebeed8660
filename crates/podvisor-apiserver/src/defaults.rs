//! Server-side defaulting, as kube-apiserver's scheme defaults and its
//! `DefaultTolerationSeconds` admission plugin fill in what a client left out: what
//! `kubectl get -o yaml` shows and what the node agent and the controllers rely on being
//! set (a pod's restart policy and grace period, a ReplicaSet's replica count).
//!
//! Applied to API objects only: static pods from the manifest directory are run as
//! written, so that a new version of podvisor never changes their container hashes.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{
    Container, HTTPGetAction, Pod, PodSecurityContext, PodSpec, Probe, Secret, Toleration,
};

/// How long a pod stays on a node that is not ready or unreachable (kube-apiserver's
/// `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

fn set<T>(field: &mut Option<T>, value: impl FnOnce() -> T) {
    if field.is_none() {
        *field = Some(value());
    }
}

/// `Always` for an image without a tag or with `:latest` (and no digest), else
/// `IfNotPresent`, as kube-apiserver decides.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// A probe's defaults (`SetDefaults_Probe`, `SetDefaults_HTTPGetAction`).
fn probe(p: &mut Probe) {
    let unset = |v: Option<i32>| v.is_none_or(|v| v == 0);
    for (field, value) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if unset(*field) {
            *field = Some(value);
        }
    }
    http_get(p.http_get.as_mut());
}

fn http_get(h: Option<&mut HTTPGetAction>) {
    if let Some(h) = h {
        set(&mut h.path, || "/".into());
        set(&mut h.scheme, || "HTTP".into());
    }
}

fn container(c: &mut Container) {
    for p in [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        probe(p);
    }
    if let Some(l) = c.lifecycle.as_mut() {
        for h in [&mut l.post_start, &mut l.pre_stop].into_iter().flatten() {
            http_get(h.http_get.as_mut());
        }
    }
    let image = c.image.clone().unwrap_or_default();
    set(&mut c.image_pull_policy, || pull_policy(&image).to_string());
    set(&mut c.termination_message_path, || {
        "/dev/termination-log".into()
    });
    set(&mut c.termination_message_policy, || "File".into());
    set(&mut c.resources, Default::default);
    for p in c.ports.iter_mut().flatten() {
        set(&mut p.protocol, || "TCP".into());
    }
    for e in c.env.iter_mut().flatten() {
        if let Some(f) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut()) {
            set(&mut f.api_version, || "v1".into());
        }
    }
}

/// A pod spec's defaults (also a ReplicaSet template's).
pub fn pod_spec(s: &mut PodSpec) {
    set(&mut s.restart_policy, || "Always".into());
    set(&mut s.termination_grace_period_seconds, || 30);
    set(&mut s.dns_policy, || "ClusterFirst".into());
    set(&mut s.scheduler_name, || "default-scheduler".into());
    set(&mut s.security_context, PodSecurityContext::default);
    set(&mut s.enable_service_links, || true);
    for c in s.init_containers.iter_mut().flatten() {
        container(c);
    }
    for c in &mut s.containers {
        container(c);
    }
}

/// A template's spec as kube-apiserver stores it: besides the pod defaults, the Go fields
/// that are not pointers drop their zero values (`initialDelaySeconds: 0` is stored as no
/// `initialDelaySeconds`), so that a template written back by a Go client (`kubectl
/// rollout undo`) compares equal to the one it came from. Pods themselves are not touched:
/// rewriting a running pod's spec would change its containers' hashes.
pub fn template_spec(s: &mut PodSpec) {
    pod_spec(s);
    let unset_false = |b: &mut Option<bool>| {
        if *b == Some(false) {
            *b = None;
        }
    };
    for f in [&mut s.host_network, &mut s.host_pid, &mut s.host_ipc] {
        unset_false(f);
    }
    let containers = s
        .init_containers
        .iter_mut()
        .flatten()
        .chain(&mut s.containers);
    for c in containers {
        for f in [&mut c.stdin, &mut c.stdin_once, &mut c.tty] {
            unset_false(f);
        }
        for m in c.volume_mounts.iter_mut().flatten() {
            unset_false(&mut m.read_only);
        }
        for p in c.ports.iter_mut().flatten() {
            if p.host_port == Some(0) {
                p.host_port = None;
            }
        }
        let probes = [
            &mut c.liveness_probe,
            &mut c.readiness_probe,
            &mut c.startup_probe,
        ];
        for p in probes.into_iter().flatten() {
            if p.initial_delay_seconds == Some(0) {
                p.initial_delay_seconds = None;
            }
        }
    }
}

/// Whether one of `tolerations` already tolerates the NoExecute taint `key`.
fn tolerates(tolerations: &[Toleration], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let key_ok = t.key.as_deref().is_none_or(str::is_empty) || t.key.as_deref() == Some(key);
        let effect_ok = t
            .effect
            .as_deref()
            .is_none_or(|e| e.is_empty() || e == "NoExecute");
        key_ok && effect_ok
    })
}

/// A new pod's defaults, with the not-ready and unreachable tolerations
/// (`DefaultTolerationSeconds`) unless it has its own.
pub fn pod(p: &mut Pod) {
    let Some(spec) = p.spec.as_mut() else {
        return;
    };
    pod_spec(spec);
    set(&mut spec.priority, || 0);
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !tolerates(tolerations, key) {
            tolerations.push(Toleration {
                key: Some(key.into()),
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                ..Toleration::default()
            });
        }
    }
}

pub fn replica_set(rs: &mut ReplicaSet) {
    let spec = &mut rs.spec;
    set(&mut spec.replicas, || 1);
    set(&mut spec.min_ready_seconds, || 0);
    if let Some(pod) = spec.template.as_mut().and_then(|t| t.spec.as_mut()) {
        template_spec(pod);
    }
}

pub fn secret(s: &mut Secret) {
    set(&mut s.type_, || "Opaque".into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_gets_what_kube_apiserver_would_fill_in() {
        let mut p: Pod = serde_json::from_value(json!({"spec": {"containers": [
            {"name": "a", "image": "busybox", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry.local:5000/app:1.2"},
            {"name": "c", "image": "app@sha256:0123"}]}}))
        .unwrap();
        pod(&mut p);
        let v = serde_json::to_value(&p).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        let policies: Vec<&str> = (0..3)
            .map(|i| spec["containers"][i]["imagePullPolicy"].as_str().unwrap())
            .collect();
        assert_eq!(policies, ["Always", "IfNotPresent", "IfNotPresent"]);
        assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(spec["containers"][0]["terminationMessagePolicy"], "File");
        let keys: Vec<&str> = spec["tolerations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable"
            ]
        );
        assert_eq!(spec["tolerations"][0]["tolerationSeconds"], 300);
    }

    #[test]
    fn probes_and_http_hooks_get_the_apis_defaults() {
        let mut p: Pod = serde_json::from_value(json!({"spec": {"containers": [{
            "name": "a", "image": "i:1",
            "readinessProbe": {"httpGet": {"port": 80}, "periodSeconds": 0},
            "livenessProbe": {"exec": {"command": ["true"]}, "failureThreshold": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 80, "scheme": "HTTPS"}}}}]}}))
        .unwrap();
        pod(&mut p);
        let c = &serde_json::to_value(&p).unwrap()["spec"]["containers"][0];
        let r = &c["readinessProbe"];
        assert_eq!(
            (
                &r["timeoutSeconds"],
                &r["periodSeconds"],
                &r["successThreshold"],
                &r["failureThreshold"]
            ),
            (&json!(1), &json!(10), &json!(1), &json!(3))
        );
        assert_eq!(
            (&r["httpGet"]["path"], &r["httpGet"]["scheme"]),
            (&json!("/"), &json!("HTTP"))
        );
        assert_eq!(c["livenessProbe"]["failureThreshold"], 5);
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTPS");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/");
    }

    #[test]
    fn what_a_client_set_stays_and_own_tolerations_win() {
        let mut p: Pod = serde_json::from_value(json!({"spec": {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 5,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "a", "image": "busybox:latest", "imagePullPolicy": "Never"}]}}))
        .unwrap();
        pod(&mut p);
        let spec = p.spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.termination_grace_period_seconds, Some(5));
        assert_eq!(
            spec.containers[0].image_pull_policy.as_deref(),
            Some("Never")
        );
        assert_eq!(
            spec.tolerations.unwrap().len(),
            1,
            "Exists with no key tolerates both"
        );
    }

    #[test]
    fn a_replica_set_runs_one_replica_unless_told() {
        let mut rs: ReplicaSet = serde_json::from_value(json!({"spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}))
        .unwrap();
        replica_set(&mut rs);
        let spec = rs.spec;
        assert_eq!(spec.replicas, Some(1));
        let template = spec.template.unwrap().spec.unwrap();
        assert_eq!(template.restart_policy.as_deref(), Some("Always"));
        assert!(
            template.tolerations.is_none(),
            "tolerations are admission's, for pods"
        );
    }
}
