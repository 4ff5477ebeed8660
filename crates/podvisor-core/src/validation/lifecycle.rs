//! A container's probes and lifecycle hooks, as the API server checks them (Kubernetes
//! 1.35), plus what podvisor refuses because it cannot do it: a port name no container
//! port has, a `tcpSocket` hook (the kubelet accepts one and fails it at every run), a stop
//! signal (containerd 1.6 and 1.7 take none through CRI).

use k8s_openapi::api::core::v1::{
    Container, ExecAction, HTTPGetAction, Lifecycle, LifecycleHandler, Probe,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::field::{FieldError, FieldErrors, FieldPath};
use crate::ports;

const NOT_FOR_INIT: &str = "may not be set for init containers without restartPolicy=Always";

/// Where a container stands among the pod's containers, for what it may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    App,
    /// An init container that runs to completion: no probes, no hooks.
    Init,
    /// An init container with `restartPolicy: Always`.
    Sidecar,
}

/// Checks the container's three probes and its lifecycle; `grace` is the pod's
/// termination grace period (a sleep hook may not outlast it).
pub(super) fn validate(
    c: &Container,
    path: &FieldPath,
    role: Role,
    grace: i64,
    errs: &mut FieldErrors,
) {
    let probes = [
        ("livenessProbe", &c.liveness_probe),
        ("readinessProbe", &c.readiness_probe),
        ("startupProbe", &c.startup_probe),
    ];
    for (field, probe) in probes {
        let Some(p) = probe else { continue };
        let p_path = path.child(field);
        if role == Role::Init {
            errs.push(FieldError::forbidden(&p_path, NOT_FOR_INIT));
            continue;
        }
        validate_probe(c, p, &p_path, field, errs);
    }
    if let Some(l) = &c.lifecycle {
        let l_path = path.child("lifecycle");
        if role == Role::Init {
            errs.push(FieldError::forbidden(&l_path, NOT_FOR_INIT));
            return;
        }
        validate_lifecycle(c, l, &l_path, grace, errs);
    }
}

fn validate_probe(c: &Container, p: &Probe, path: &FieldPath, field: &str, errs: &mut FieldErrors) {
    validate_probe_numbers(p, path, field, errs);
    let handlers = [
        ("exec", p.exec.is_some()),
        ("httpGet", p.http_get.is_some()),
        ("tcpSocket", p.tcp_socket.is_some()),
        ("grpc", p.grpc.is_some()),
    ];
    one_handler(&handlers, path, errs);
    if let Some(e) = &p.exec {
        validate_exec(e, &path.child("exec"), errs);
    }
    if let Some(h) = &p.http_get {
        validate_http(c, h, &path.child("httpGet"), errs);
    }
    if let Some(t) = &p.tcp_socket {
        validate_port(c, &t.port, &path.child("tcpSocket").child("port"), errs);
    }
    if let Some(g) = &p.grpc
        && !(1..=65535).contains(&g.port)
    {
        errs.push(FieldError::invalid_number(
            &path.child("grpc").child("port"),
            g.port.into(),
            "must be between 1 and 65535, inclusive",
        ));
    }
}

/// The probe's timing, thresholds and grace period.
fn validate_probe_numbers(p: &Probe, path: &FieldPath, field: &str, errs: &mut FieldErrors) {
    let numbers = [
        ("initialDelaySeconds", p.initial_delay_seconds),
        ("timeoutSeconds", p.timeout_seconds),
        ("periodSeconds", p.period_seconds),
        ("successThreshold", p.success_threshold),
        ("failureThreshold", p.failure_threshold),
    ];
    for (name, v) in numbers {
        if let Some(v) = v.filter(|v| *v < 0) {
            errs.push(FieldError::invalid_number(
                &path.child(name),
                v.into(),
                "must be greater than or equal to 0",
            ));
        }
    }
    // Zero is "unset": the API defaults it to 1 before it validates.
    if field != "readinessProbe"
        && let Some(s) = p.success_threshold.filter(|s| *s > 1)
    {
        errs.push(FieldError::invalid_number(
            &path.child("successThreshold"),
            s.into(),
            "must be 1",
        ));
    }
    if let Some(g) = p.termination_grace_period_seconds {
        let g_path = path.child("terminationGracePeriodSeconds");
        if field == "readinessProbe" {
            errs.push(FieldError::invalid_number(
                &g_path,
                g,
                "must not be set for readinessProbes",
            ));
        } else if g <= 0 {
            errs.push(FieldError::invalid_number(
                &g_path,
                g,
                "must be greater than 0",
            ));
        }
    }
}

/// Exactly one of the handlers is set.
fn one_handler(handlers: &[(&str, bool)], path: &FieldPath, errs: &mut FieldErrors) {
    let mut set = handlers.iter().filter(|(_, on)| *on).map(|(n, _)| *n);
    if set.next().is_none() {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    for extra in set {
        errs.push(FieldError::forbidden(
            &path.child(extra),
            "may not specify more than 1 handler type",
        ));
    }
}

fn validate_exec(e: &ExecAction, path: &FieldPath, errs: &mut FieldErrors) {
    if e.command.as_deref().is_none_or(<[String]>::is_empty) {
        errs.push(FieldError::required(&path.child("command"), ""));
    }
}

fn validate_http(c: &Container, h: &HTTPGetAction, path: &FieldPath, errs: &mut FieldErrors) {
    validate_port(c, &h.port, &path.child("port"), errs);
    if let Some(s) = h
        .scheme
        .as_deref()
        .filter(|s| !matches!(*s, "HTTP" | "HTTPS"))
    {
        errs.push(FieldError::not_supported(
            &path.child("scheme"),
            s,
            &["HTTP", "HTTPS"],
        ));
    }
    for (i, header) in h.http_headers.iter().flatten().enumerate() {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if header.name.is_empty() || !header.name.bytes().all(token) {
            errs.push(FieldError::invalid(
                &path.child("httpHeaders").index(i).child("name"),
                &header.name,
                "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name')",
            ));
        }
        if header.value.bytes().any(|b| b == b'\r' || b == b'\n') {
            errs.push(FieldError::invalid(
                &path.child("httpHeaders").index(i).child("value"),
                &header.value,
                "must not contain a line break",
            ));
        }
    }
}

fn validate_port(c: &Container, port: &IntOrString, path: &FieldPath, errs: &mut FieldErrors) {
    if let Err(e) = ports::resolve(c, port) {
        let value = match port {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::String(s) => s.clone(),
        };
        errs.push(FieldError::invalid(path, &value, &e.to_string()));
    }
}

fn validate_lifecycle(
    c: &Container,
    l: &Lifecycle,
    path: &FieldPath,
    grace: i64,
    errs: &mut FieldErrors,
) {
    for (field, hook) in [("postStart", &l.post_start), ("preStop", &l.pre_stop)] {
        if let Some(h) = hook {
            validate_hook(c, h, &path.child(field), grace, errs);
        }
    }
    if l.stop_signal.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("stopSignal"),
            "podvisor cannot honour a container stop signal: containerd 1.6 and 1.7 take none through CRI (the image's STOPSIGNAL applies)",
        ));
    }
}

fn validate_hook(
    c: &Container,
    h: &LifecycleHandler,
    path: &FieldPath,
    grace: i64,
    errs: &mut FieldErrors,
) {
    let handlers = [
        ("exec", h.exec.is_some()),
        ("httpGet", h.http_get.is_some()),
        ("tcpSocket", h.tcp_socket.is_some()),
        ("sleep", h.sleep.is_some()),
    ];
    one_handler(&handlers, path, errs);
    if let Some(e) = &h.exec {
        validate_exec(e, &path.child("exec"), errs);
    }
    if let Some(g) = &h.http_get {
        validate_http(c, g, &path.child("httpGet"), errs);
    }
    if h.tcp_socket.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("tcpSocket"),
            "tcpSocket is not a lifecycle handler (deprecated; the kubelet accepts it and fails it at every run): use exec, httpGet or sleep",
        ));
    }
    if let Some(s) = &h.sleep
        && !(0..=grace).contains(&s.seconds)
    {
        errs.push(FieldError::invalid_number(
            &path.child("sleep").child("seconds"),
            s.seconds,
            &format!("must be non-negative and less than terminationGracePeriodSeconds ({grace})"),
        ));
    }
}
