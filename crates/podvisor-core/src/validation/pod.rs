//! The checks the API server makes on what podvisor uses of a pod, and the refusal of what
//! podvisor cannot run, as field errors. Manifests and (next) API objects go through here.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, VolumeMount};

use super::field::{FieldError, FieldErrors, FieldPath};
use super::lifecycle::{self, Role};
use super::{alpha, dns, ephemeral, names, resize_policy, restart, security, unsupported, volumes};
use crate::grace::GracePeriod;
use crate::phase::RestartPolicy;
use crate::quantity;
use crate::restart as restart_rules;

/// Every problem with the pod, or nothing.
pub fn validate_pod(pod: &Pod) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors(Vec::new());
    let meta = FieldPath::new("metadata");
    match pod.metadata.name.as_deref() {
        Some(name) => errs.0.extend(names::subdomain(&meta.child("name"), name)),
        None => errs.push(FieldError::required(
            &meta.child("name"),
            "name or generateName is required",
        )),
    }
    if let Some(ns) = &pod.metadata.namespace {
        errs.0.extend(names::label(&meta.child("namespace"), ns));
    }
    unsupported::validate_unknown(pod, &mut errs);
    match &pod.spec {
        Some(spec) => validate_spec(spec, &FieldPath::new("spec"), &mut errs),
        None => errs.push(FieldError::required(&FieldPath::new("spec"), "")),
    }
    errs.into_result()
}

fn validate_spec(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    if spec.containers.is_empty() {
        errs.push(FieldError::required(&path.child("containers"), ""));
    }
    if let Some(p) = spec.restart_policy.as_deref()
        && RestartPolicy::parse(p).is_none()
    {
        errs.push(FieldError::not_supported(
            &path.child("restartPolicy"),
            p,
            &RestartPolicy::NAMES,
        ));
    }
    if let Some(h) = &spec.hostname {
        errs.0.extend(names::label(&path.child("hostname"), h));
    }
    if let Some(d) = &spec.subdomain {
        errs.0.extend(names::label(&path.child("subdomain"), d));
    }
    if let Some(g) = spec.termination_grace_period_seconds
        && !(0..=GracePeriod::MAX_SECONDS).contains(&g)
    {
        let detail = format!(
            "must be between 0 and {} (one year)",
            GracePeriod::MAX_SECONDS
        );
        errs.push(FieldError::invalid_number(
            &path.child("terminationGracePeriodSeconds"),
            g,
            &detail,
        ));
    }
    if let Some(d) = spec.active_deadline_seconds.filter(|d| *d <= 0) {
        errs.push(FieldError::invalid_number(
            &path.child("activeDeadlineSeconds"),
            d,
            "must be greater than 0",
        ));
    }
    let volumes = volumes::validate_volumes(
        spec.volumes.as_deref().unwrap_or(&[]),
        &path.child("volumes"),
        errs,
    );
    security::validate_pod(spec, path, errs);
    dns::validate(spec, path, errs);
    unsupported::validate_spec(spec, path, errs);
    alpha::validate(spec, path, errs);
    validate_containers(spec, path, &volumes, errs);
}

/// Every init and app container: its own fields, restart policy, probes and hooks, and
/// that no two share a name.
fn validate_containers(
    spec: &PodSpec,
    path: &FieldPath,
    volumes: &HashSet<&str>,
    errs: &mut FieldErrors,
) {
    let grace = spec
        .termination_grace_period_seconds
        .unwrap_or(GracePeriod::DEFAULT.seconds());
    let mut names = HashSet::new();
    let inits = spec.init_containers.as_deref().unwrap_or(&[]);
    let groups = [
        (inits, path.child("initContainers"), true),
        (&spec.containers[..], path.child("containers"), false),
    ];
    for (list, list_path, init) in &groups {
        for (i, c) in list.iter().enumerate() {
            let c_path = list_path.index(i);
            validate_container(c, &c_path, volumes, errs);
            security::validate_container(c, &c_path, errs);
            restart::validate(c, &c_path, *init, errs);
            let role = match (init, restart_rules::is_sidecar(c)) {
                (false, _) => Role::App,
                (true, true) => Role::Sidecar,
                (true, false) => Role::Init,
            };
            lifecycle::validate(c, &c_path, role, grace, errs);
            let never = spec.restart_policy.as_deref() == Some("Never");
            resize_policy::validate(c, &c_path, (never, role == Role::Init), errs);
            if !names.insert(c.name.clone()) {
                errs.push(FieldError::duplicate(&c_path.child("name"), &c.name));
            }
        }
    }
    ephemeral::validate(spec, path, (volumes, &mut names), errs);
}

pub(super) fn validate_container(
    c: &Container,
    path: &FieldPath,
    volumes: &HashSet<&str>,
    errs: &mut FieldErrors,
) {
    errs.0.extend(names::label(&path.child("name"), &c.name));
    if c.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    for (i, p) in c.ports.iter().flatten().enumerate() {
        let p_path = path.child("ports").index(i);
        if !(1..=65535).contains(&p.container_port) {
            let port = p_path.child("containerPort");
            errs.push(FieldError::invalid_number(
                &port,
                p.container_port.into(),
                "must be between 1 and 65535, inclusive",
            ));
        }
        if let Some(h) = p.host_port.filter(|h| !(0..=65535).contains(h)) {
            errs.push(FieldError::invalid_number(
                &p_path.child("hostPort"),
                h.into(),
                "must be between 0 and 65535, inclusive",
            ));
        }
    }
    validate_resources(c, &path.child("resources"), errs);
    validate_termination(c, path, errs);
    unsupported::validate_container(c, path, errs);
    let privileged = c.security_context.as_ref().and_then(|s| s.privileged) == Some(true);
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let at = path.child("volumeMounts").index(i);
        validate_mount(m, &at, volumes, errs);
        unsupported::validate_mount(m, privileged, &at, errs);
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        volumes::validate_env(e, &path.child("env").index(i), errs);
    }
    for (i, e) in c.env_from.iter().flatten().enumerate() {
        volumes::validate_env_from(e, &path.child("envFrom").index(i), errs);
    }
}

fn validate_termination(c: &Container, path: &FieldPath, errs: &mut FieldErrors) {
    const POLICIES: [&str; 2] = ["File", "FallbackToLogsOnError"];
    if let Some(p) = c.termination_message_policy.as_deref()
        && !POLICIES.contains(&p)
    {
        let at = path.child("terminationMessagePolicy");
        errs.push(FieldError::not_supported(&at, p, &POLICIES));
    }
    if let Some(p) = c.termination_message_path.as_deref()
        && !p.starts_with('/')
    {
        let at = path.child("terminationMessagePath");
        errs.push(FieldError::invalid(&at, p, "must be an absolute path"));
    }
}

fn validate_resources(c: &Container, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(r) = &c.resources else { return };
    for (kind, m) in [("requests", &r.requests), ("limits", &r.limits)] {
        for (name, q) in m.iter().flatten() {
            let parsed = if name == "cpu" {
                quantity::parse_milli(&q.0)
            } else {
                quantity::parse_units(&q.0)
            };
            if let Err(e) = parsed {
                errs.push(FieldError::invalid(
                    &path.child(kind).key(name),
                    &q.0,
                    &e.to_string(),
                ));
            }
        }
    }
}

fn validate_mount(
    m: &VolumeMount,
    path: &FieldPath,
    volumes: &HashSet<&str>,
    errs: &mut FieldErrors,
) {
    if !volumes.contains(m.name.as_str()) {
        errs.push(FieldError::not_found(&path.child("name"), &m.name));
    }
    if !m.mount_path.starts_with('/') {
        errs.push(FieldError::invalid(
            &path.child("mountPath"),
            &m.mount_path,
            "must be an absolute path",
        ));
    }
    // A subPath stays inside its volume: `/etc` or `../..` would reach the host.
    if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
        let sub_path = path.child("subPath");
        if sub.starts_with('/') {
            errs.push(FieldError::invalid(
                &sub_path,
                sub,
                "must be a relative path",
            ));
        } else if sub.split('/').any(|part| part == "..") {
            errs.push(FieldError::invalid(&sub_path, sub, "must not contain '..'"));
        }
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
