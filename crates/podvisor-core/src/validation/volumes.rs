//! Volumes and the environment: what podvisor fills a container from (emptyDir, hostPath,
//! configMap, secret, downwardAPI and projected volumes; env from values, the downward
//! API, ConfigMap and Secret keys), checked as the API server checks it, and what it
//! cannot honour refused with the reason.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, EmptyDirVolumeSource, EnvFromSource, EnvVar, KeyToPath,
    ServiceAccountTokenProjection, Volume, VolumeProjection,
};

use super::field::{FieldError, FieldErrors, FieldPath};
use super::names;

/// `fieldRef` paths a container's environment may read (`metadata.labels['k']` and
/// `metadata.annotations['k']` besides).
pub const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.podIP",
    "status.podIPs",
    "status.hostIP",
    "status.hostIPs",
];

/// `fieldRef` paths a downwardAPI file may hold (with the same subscripts).
pub const FILE_FIELD_PATHS: [&str; 5] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
];

/// `resourceFieldRef` resources podvisor gives.
pub const RESOURCES: [&str; 4] = [
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

const VOLUME_KINDS: &str =
    "podvisor supports emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes";

fn subscripted(path: &str) -> bool {
    ["metadata.labels['", "metadata.annotations['"]
        .iter()
        .any(|p| {
            path.strip_prefix(p)
                .is_some_and(|k| k.len() > 2 && k.ends_with("']"))
        })
}

fn check_field_path(path: &str, allowed: &[&str], at: &FieldPath, errs: &mut FieldErrors) {
    if !allowed.contains(&path) && !subscripted(path) {
        errs.push(FieldError::not_supported(at, path, allowed));
    }
}

/// Kubernetes' message for a file mode out of range.
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// A file's mode, as `defaultMode` or an item's `mode`: 0 to 0777, as Kubernetes allows;
/// setuid, setgid and sticky bits are refused.
fn check_mode(mode: Option<i32>, at: &FieldPath, errs: &mut FieldErrors) {
    if let Some(m) = mode
        && !(0..=0o777).contains(&m)
    {
        errs.push(FieldError::invalid_number(at, i64::from(m), FILE_MODE));
    }
}

/// A file path inside a volume: relative, no `..` element, not starting with `..`.
fn check_item_path(p: &str, at: &FieldPath, errs: &mut FieldErrors) {
    if p.is_empty() {
        errs.push(FieldError::required(at, ""));
    } else if p.starts_with('/') {
        errs.push(FieldError::invalid(at, p, "must be a relative path"));
    } else if p.starts_with("..") || p.split('/').any(|e| e == "..") {
        errs.push(FieldError::invalid(at, p, "must not contain '..'"));
    }
}

fn check_items(items: Option<&[KeyToPath]>, at: &FieldPath, errs: &mut FieldErrors) {
    for (i, item) in items.unwrap_or(&[]).iter().enumerate() {
        let p = at.index(i);
        if item.key.is_empty() {
            errs.push(FieldError::required(&p.child("key"), ""));
        }
        check_item_path(&item.path, &p.child("path"), errs);
        check_mode(item.mode, &p.child("mode"), errs);
    }
}

fn check_downward(items: Option<&[DownwardAPIVolumeFile]>, at: &FieldPath, errs: &mut FieldErrors) {
    for (i, item) in items.unwrap_or(&[]).iter().enumerate() {
        let p = at.index(i);
        check_item_path(&item.path, &p.child("path"), errs);
        check_mode(item.mode, &p.child("mode"), errs);
        match (&item.field_ref, &item.resource_field_ref) {
            (Some(f), None) => {
                check_field_path(
                    &f.field_path,
                    &FILE_FIELD_PATHS,
                    &p.child("fieldRef").child("fieldPath"),
                    errs,
                );
            }
            (None, Some(r)) => {
                let rp = p.child("resourceFieldRef");
                if r.container_name.as_deref().is_none_or(str::is_empty) {
                    errs.push(FieldError::required(&rp.child("containerName"), ""));
                }
                if !RESOURCES.contains(&r.resource.as_str()) {
                    errs.push(FieldError::not_supported(
                        &rp.child("resource"),
                        &r.resource,
                        &RESOURCES,
                    ));
                }
            }
            _ => errs.push(FieldError::invalid(
                &p,
                "",
                "exactly one of fieldRef and resourceFieldRef",
            )),
        }
    }
}

fn check_projection(s: &VolumeProjection, at: &FieldPath, errs: &mut FieldErrors) {
    let given = [
        s.config_map.is_some(),
        s.secret.is_some(),
        s.downward_api.is_some(),
        s.service_account_token.is_some(),
        s.cluster_trust_bundle.is_some(),
        s.pod_certificate.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        errs.push(FieldError::invalid(
            at,
            "",
            "exactly one source per projection",
        ));
    }
    if let Some(cm) = &s.config_map {
        check_items(
            cm.items.as_deref(),
            &at.child("configMap").child("items"),
            errs,
        );
    }
    if let Some(sec) = &s.secret {
        check_items(
            sec.items.as_deref(),
            &at.child("secret").child("items"),
            errs,
        );
    }
    if let Some(d) = &s.downward_api {
        check_downward(
            d.items.as_deref(),
            &at.child("downwardAPI").child("items"),
            errs,
        );
    }
    if let Some(t) = &s.service_account_token {
        check_token(t, &at.child("serviceAccountToken"), errs);
    }
    if s.cluster_trust_bundle.is_some() {
        errs.push(FieldError::forbidden(
            &at.child("clusterTrustBundle"),
            "podvisor does not project ClusterTrustBundles",
        ));
    }
    if s.pod_certificate.is_some() {
        errs.push(FieldError::forbidden(
            &at.child("podCertificate"),
            "podvisor does not issue pod certificates",
        ));
    }
}

/// A token projection's path and lifetime (ten minutes to 2^32 seconds).
fn check_token(t: &ServiceAccountTokenProjection, tp: &FieldPath, errs: &mut FieldErrors) {
    check_item_path(&t.path, &tp.child("path"), errs);
    let why = match t.expiration_seconds {
        Some(e) if e < 600 => "may not specify a duration less than 10 minutes",
        Some(e) if e > 1 << 32 => "may not specify a duration larger than 2^32 seconds",
        _ => return,
    };
    let e = t.expiration_seconds.unwrap_or_default();
    errs.push(FieldError::invalid_number(
        &tp.child("expirationSeconds"),
        e,
        why,
    ));
}

fn check_empty_dir(e: &EmptyDirVolumeSource, at: &FieldPath, errs: &mut FieldErrors) {
    let medium = e.medium.as_deref().unwrap_or("");
    if !["", "Memory"].contains(&medium) {
        errs.push(FieldError::not_supported(
            &at.child("medium"),
            medium,
            &["", "Memory"],
        ));
    }
    // On disk the node evicts the pod past it; in memory it is the tmpfs's size.
    if let Some(limit) = &e.size_limit
        && !crate::quantity::parse_units(&limit.0).is_ok_and(|b| b >= 0)
    {
        errs.push(FieldError::invalid(
            &at.child("sizeLimit"),
            &limit.0,
            "must be a non-negative quantity",
        ));
    }
}

/// One volume's source.
fn check_source(v: &Volume, at: &FieldPath, errs: &mut FieldErrors) {
    if let Some(hp) = &v.host_path {
        if !hp.path.starts_with('/') {
            errs.push(FieldError::invalid(
                &at.child("hostPath").child("path"),
                &hp.path,
                "must be an absolute path",
            ));
        }
    } else if let Some(e) = &v.empty_dir {
        check_empty_dir(e, &at.child("emptyDir"), errs);
    } else if let Some(cm) = &v.config_map {
        check_mode(
            cm.default_mode,
            &at.child("configMap").child("defaultMode"),
            errs,
        );
        check_items(
            cm.items.as_deref(),
            &at.child("configMap").child("items"),
            errs,
        );
    } else if let Some(s) = &v.secret {
        if s.secret_name.as_deref().is_none_or(str::is_empty) {
            errs.push(FieldError::required(
                &at.child("secret").child("secretName"),
                "",
            ));
        }
        check_mode(
            s.default_mode,
            &at.child("secret").child("defaultMode"),
            errs,
        );
        check_items(s.items.as_deref(), &at.child("secret").child("items"), errs);
    } else if let Some(d) = &v.downward_api {
        check_mode(
            d.default_mode,
            &at.child("downwardAPI").child("defaultMode"),
            errs,
        );
        check_downward(
            d.items.as_deref(),
            &at.child("downwardAPI").child("items"),
            errs,
        );
    } else if let Some(p) = &v.projected {
        check_mode(
            p.default_mode,
            &at.child("projected").child("defaultMode"),
            errs,
        );
        let sp = at.child("projected").child("sources");
        for (i, s) in p.sources.iter().flatten().enumerate() {
            check_projection(s, &sp.index(i), errs);
        }
    } else {
        errs.push(FieldError::forbidden(at, VOLUME_KINDS));
    }
}

/// Checks every volume; returns the declared names.
pub(super) fn validate_volumes<'a>(
    volumes: &'a [Volume],
    path: &FieldPath,
    errs: &mut FieldErrors,
) -> HashSet<&'a str> {
    let mut declared = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let v_path = path.index(i);
        errs.0.extend(names::label(&v_path.child("name"), &v.name));
        if !declared.insert(v.name.as_str()) {
            errs.push(FieldError::duplicate(&v_path.child("name"), &v.name));
        }
        check_source(v, &v_path, errs);
    }
    declared
}

pub(super) fn validate_env(e: &EnvVar, path: &FieldPath, errs: &mut FieldErrors) {
    if e.name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let Some(from) = &e.value_from else { return };
    let at = path.child("valueFrom");
    let given = [
        from.field_ref.is_some(),
        from.resource_field_ref.is_some(),
        from.config_map_key_ref.is_some(),
        from.secret_key_ref.is_some(),
        from.file_key_ref.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        errs.push(FieldError::invalid(&at, "", "exactly one source"));
    }
    if let Some(f) = &from.field_ref {
        check_field_path(
            &f.field_path,
            &ENV_FIELD_PATHS,
            &at.child("fieldRef").child("fieldPath"),
            errs,
        );
    }
    if let Some(r) = &from.resource_field_ref
        && !RESOURCES.contains(&r.resource.as_str())
    {
        errs.push(FieldError::not_supported(
            &at.child("resourceFieldRef").child("resource"),
            &r.resource,
            &RESOURCES,
        ));
    }
    let keys = [
        from.config_map_key_ref
            .as_ref()
            .map(|r| ("configMapKeyRef", &r.name, &r.key)),
        from.secret_key_ref
            .as_ref()
            .map(|r| ("secretKeyRef", &r.name, &r.key)),
    ];
    for (field, name, key) in keys.into_iter().flatten() {
        if name.is_empty() {
            errs.push(FieldError::required(&at.child(field).child("name"), ""));
        }
        if key.is_empty() {
            errs.push(FieldError::required(&at.child(field).child("key"), ""));
        }
    }
    if from.file_key_ref.is_some() {
        errs.push(FieldError::forbidden(
            &at.child("fileKeyRef"),
            "podvisor does not read environment files",
        ));
    }
}

pub(super) fn validate_env_from(e: &EnvFromSource, path: &FieldPath, errs: &mut FieldErrors) {
    let names = [
        e.config_map_ref.as_ref().map(|r| ("configMapRef", &r.name)),
        e.secret_ref.as_ref().map(|r| ("secretRef", &r.name)),
    ];
    let given: Vec<_> = names.into_iter().flatten().collect();
    if given.len() != 1 {
        errs.push(FieldError::invalid(
            path,
            "",
            "exactly one of configMapRef and secretRef",
        ));
    }
    for (field, name) in given {
        if name.is_empty() {
            errs.push(FieldError::required(&path.child(field).child("name"), ""));
        }
    }
}
