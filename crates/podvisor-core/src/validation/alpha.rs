//! Fields of Kubernetes 1.37's alpha features that podvisor does not implement, each
//! refused with the reason when set, as `unsupported.rs` refuses older ones: who owns a
//! volume's files (`defaultUser`, `user`: AtomicWriteVolumeUserFields), an emptyDir's mode
//! (EmptyDirVolumeMode), a mount's extra options (VolumeBindMountOptions), a gRPC probe
//! over TLS and an HTTP probe over another protocol than HTTP/1.1. A kubelet with its
//! default feature gates does not honour them either (the API server drops them unless
//! the gate is on).

use k8s_openapi::api::core::v1::{
    Container, EphemeralContainer, HTTPGetAction, KeyToPath, PodSpec, Probe, ProjectedVolumeSource,
    Volume,
};

use super::field::{FieldError, FieldErrors, FieldPath};

const OWNER: &str = "podvisor writes a volume's files as root, owned by the pod's fsGroup \
                     (the AtomicWriteVolumeUserFields alpha is not implemented)";

fn refuse(set: bool, at: FieldPath, why: &str, errs: &mut FieldErrors) {
    if set {
        errs.push(FieldError::forbidden(&at, why));
    }
}

pub(super) fn validate(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        volume(v, &path.child("volumes").index(i), errs);
    }
    let groups = [
        (spec.init_containers.as_deref(), "initContainers"),
        (Some(&spec.containers[..]), "containers"),
    ];
    for (list, name) in groups {
        for (i, c) in list.unwrap_or(&[]).iter().enumerate() {
            container(c, &path.child(name).index(i), errs);
        }
    }
    for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
        ephemeral(c, &path.child("ephemeralContainers").index(i), errs);
    }
}

fn items(items: Option<&Vec<KeyToPath>>, at: &FieldPath, errs: &mut FieldErrors) {
    for (j, item) in items.into_iter().flatten().enumerate() {
        let at = at.child("items").index(j).child("user");
        refuse(item.user.is_some(), at, OWNER, errs);
    }
}

fn volume(v: &Volume, at: &FieldPath, errs: &mut FieldErrors) {
    if let Some(e) = &v.empty_dir {
        let why =
            "podvisor makes every emptyDir 0777 (the EmptyDirVolumeMode alpha is not implemented)";
        refuse(
            e.mode.is_some(),
            at.child("emptyDir").child("mode"),
            why,
            errs,
        );
    }
    if let Some(c) = &v.config_map {
        let at = at.child("configMap");
        refuse(
            c.default_user.is_some(),
            at.child("defaultUser"),
            OWNER,
            errs,
        );
        items(c.items.as_ref(), &at, errs);
    }
    if let Some(s) = &v.secret {
        let at = at.child("secret");
        refuse(
            s.default_user.is_some(),
            at.child("defaultUser"),
            OWNER,
            errs,
        );
        items(s.items.as_ref(), &at, errs);
    }
    if let Some(d) = &v.downward_api {
        let at = at.child("downwardAPI");
        refuse(
            d.default_user.is_some(),
            at.child("defaultUser"),
            OWNER,
            errs,
        );
        for (j, f) in d.items.iter().flatten().enumerate() {
            refuse(
                f.user.is_some(),
                at.child("items").index(j).child("user"),
                OWNER,
                errs,
            );
        }
    }
    if let Some(p) = &v.projected {
        projected(p, &at.child("projected"), errs);
    }
}

fn projected(p: &ProjectedVolumeSource, at: &FieldPath, errs: &mut FieldErrors) {
    refuse(
        p.default_user.is_some(),
        at.child("defaultUser"),
        OWNER,
        errs,
    );
    for (j, s) in p.sources.iter().flatten().enumerate() {
        let at = at.child("sources").index(j);
        if let Some(c) = &s.config_map {
            items(c.items.as_ref(), &at.child("configMap"), errs);
        }
        if let Some(c) = &s.secret {
            items(c.items.as_ref(), &at.child("secret"), errs);
        }
        for (k, f) in s
            .downward_api
            .iter()
            .flat_map(|d| d.items.iter().flatten())
            .enumerate()
        {
            let at = at
                .child("downwardAPI")
                .child("items")
                .index(k)
                .child("user");
            refuse(f.user.is_some(), at, OWNER, errs);
        }
        if let Some(t) = &s.service_account_token {
            let at = at.child("serviceAccountToken").child("user");
            refuse(t.user.is_some(), at, OWNER, errs);
        }
    }
}

fn container(c: &Container, at: &FieldPath, errs: &mut FieldErrors) {
    mounts(c.volume_mounts.as_deref(), at, errs);
    let probes = [
        (&c.liveness_probe, "livenessProbe"),
        (&c.readiness_probe, "readinessProbe"),
        (&c.startup_probe, "startupProbe"),
    ];
    for (p, name) in probes {
        if let Some(p) = p {
            probe(p, &at.child(name), errs);
        }
    }
    let hooks = c
        .lifecycle
        .iter()
        .flat_map(|l| [(&l.post_start, "postStart"), (&l.pre_stop, "preStop")]);
    for (h, name) in hooks {
        if let Some(get) = h.as_ref().and_then(|h| h.http_get.as_ref()) {
            let at = at.child("lifecycle").child(name).child("httpGet");
            http(get, &at, errs);
        }
    }
}

fn ephemeral(c: &EphemeralContainer, at: &FieldPath, errs: &mut FieldErrors) {
    mounts(c.volume_mounts.as_deref(), at, errs);
}

fn mounts(
    mounts: Option<&[k8s_openapi::api::core::v1::VolumeMount]>,
    at: &FieldPath,
    errs: &mut FieldErrors,
) {
    for (i, m) in mounts.unwrap_or(&[]).iter().enumerate() {
        let set = m.bind_mount_options.as_ref().is_some_and(|o| !o.is_empty());
        let why = "podvisor mounts volumes with the runtime's options only (the \
                   VolumeBindMountOptions alpha is not implemented)";
        refuse(
            set,
            at.child("volumeMounts").index(i).child("bindMountOptions"),
            why,
            errs,
        );
    }
}

fn probe(p: &Probe, at: &FieldPath, errs: &mut FieldErrors) {
    let mode = p.grpc.as_ref().and_then(|g| g.mode.as_deref());
    if mode.is_some_and(|m| m != "Plaintext") {
        let why = "podvisor's gRPC probes connect in plaintext only";
        errs.push(FieldError::forbidden(&at.child("grpc").child("mode"), why));
    }
    if let Some(get) = &p.http_get {
        http(get, &at.child("httpGet"), errs);
    }
}

fn http(get: &HTTPGetAction, at: &FieldPath, errs: &mut FieldErrors) {
    if let Some(p) = get.protocol.as_deref().filter(|p| *p != "HTTP/1.1") {
        let why = format!("{p:?}: podvisor's HTTP probes and hooks speak HTTP/1.1 only");
        errs.push(FieldError::forbidden(&at.child("protocol"), &why));
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::super::validate_pod;

    fn refusal(spec: serde_json::Value) -> String {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "spec": spec
        }))
        .unwrap();
        validate_pod(&pod).unwrap_err().to_string()
    }

    #[test]
    fn a_grpc_probe_over_tls_and_an_http2_probe_are_refused_plaintext_is_not() {
        let c = |probe: serde_json::Value| {
            serde_json::json!({"containers": [{
            "name": "c", "image": "i", "readinessProbe": probe}]})
        };
        let tls = refusal(c(
            serde_json::json!({"grpc": {"port": 9090, "mode": "TLS"}}),
        ));
        assert!(
            tls.contains("spec.containers[0].readinessProbe.grpc.mode"),
            "{tls}"
        );
        let h2 = refusal(c(
            serde_json::json!({"httpGet": {"port": 80, "protocol": "HTTP/2"}}),
        ));
        assert!(h2.contains("readinessProbe.httpGet.protocol"), "{h2}");
        let plain: Pod = serde_json::from_value(serde_json::json!({"metadata": {"name": "p"},
            "spec": c(serde_json::json!({"grpc": {"port": 9090, "mode": "Plaintext"}}))}))
        .unwrap();
        assert!(validate_pod(&plain).is_ok());
    }
}
