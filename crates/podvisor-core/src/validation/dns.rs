//! `dnsPolicy`, `dnsConfig`, `hostAliases` and `hostnameOverride`, checked as the API
//! server checks them.

use k8s_openapi::api::core::v1::PodSpec;

use super::field::{FieldError, FieldErrors, FieldPath};

const POLICIES: [&str; 4] = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const MAX_NAMESERVERS: usize = 3;
const MAX_SEARCHES: usize = 32;

fn check_ip(ip: &str, at: &FieldPath, errs: &mut FieldErrors) {
    if ip.parse::<std::net::IpAddr>().is_err() {
        errs.push(FieldError::invalid(at, ip, "must be a valid IP address"));
    }
}

/// `hostnameOverride`: a DNS subdomain of at most 64 characters, not beside
/// `setHostnameAsFQDN` or `hostNetwork` (kube-apiserver's `validateHostnameOverride`).
fn hostname_override(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(h) = spec.hostname_override.as_deref() else {
        return;
    };
    let at = path.child("hostnameOverride");
    if spec.set_hostname_as_fqdn == Some(true) {
        errs.push(FieldError::forbidden(
            &at,
            "may not be specified when setHostnameAsFQDN is true",
        ));
    }
    if spec.host_network == Some(true) {
        errs.push(FieldError::forbidden(
            &at,
            "may not be specified when hostNetwork is true",
        ));
    }
    if h.len() > 64 {
        errs.push(FieldError::invalid(&at, h, "must have at most 64 bytes"));
    }
    errs.0.extend(super::names::subdomain(&at, h));
}

pub(super) fn validate(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    hostname_override(spec, path, errs);
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    if !POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(
            &path.child("dnsPolicy"),
            policy,
            &POLICIES,
        ));
    }
    let at = path.child("dnsConfig");
    let servers = spec
        .dns_config
        .as_ref()
        .and_then(|c| c.nameservers.as_deref())
        .unwrap_or(&[]);
    if policy == "None" && servers.is_empty() {
        let detail = "must provide at least one DNS nameserver when `dnsPolicy` is None";
        errs.push(FieldError::required(&at.child("nameservers"), detail));
    }
    if servers.len() > MAX_NAMESERVERS {
        let detail = format!("must not have more than {MAX_NAMESERVERS} nameservers");
        errs.push(FieldError::invalid(
            &at.child("nameservers"),
            &servers.join(","),
            &detail,
        ));
    }
    for (i, ip) in servers.iter().enumerate() {
        check_ip(ip, &at.child("nameservers").index(i), errs);
    }
    let searches = spec
        .dns_config
        .as_ref()
        .and_then(|c| c.searches.as_deref())
        .unwrap_or(&[]);
    if searches.len() > MAX_SEARCHES {
        let detail = format!("must not have more than {MAX_SEARCHES} search paths");
        errs.push(FieldError::invalid(
            &at.child("searches"),
            &searches.join(","),
            &detail,
        ));
    }
    let options = spec
        .dns_config
        .as_ref()
        .and_then(|c| c.options.as_deref())
        .unwrap_or(&[]);
    for (i, o) in options.iter().enumerate() {
        if o.name.as_deref().is_none_or(str::is_empty) {
            errs.push(FieldError::required(
                &at.child("options").index(i).child("name"),
                "",
            ));
        }
    }
    host_aliases(spec, path, errs);
}

fn host_aliases(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    for (i, a) in spec.host_aliases.iter().flatten().enumerate() {
        let ap = path.child("hostAliases").index(i);
        check_ip(&a.ip, &ap.child("ip"), errs);
        if a.hostnames.as_ref().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(&ap.child("hostnames"), ""));
        }
    }
}
