//! Security contexts: what podvisor honours (capabilities, seccomp, AppArmor, the
//! non-root policy, `/proc` masking, supplemental groups, `fsGroup` on emptyDirs, the
//! kubelet's safe sysctls) and what it refuses with the reason instead of ignoring
//! (SELinux and Windows options, an unmasked `/proc`, user namespaces, seccomp profiles
//! from the node's disk, unsafe sysctls).

use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, PodSecurityContext, PodSpec, SeccompProfile, SecurityContext,
};

use super::field::{FieldError, FieldErrors, FieldPath};

/// The sysctls the kubelet allows without `--allowed-unsafe-sysctls`: namespaced, and
/// unable to affect other pods or the node.
pub const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// A sysctl name with `/` separators in the dotted form (Kubernetes accepts both).
pub fn dotted_sysctl(name: &str) -> String {
    name.replace('/', ".")
}

const SECCOMP_TYPES: [&str; 3] = ["RuntimeDefault", "Unconfined", "Localhost"];
const APPARMOR_TYPES: [&str; 3] = ["RuntimeDefault", "Unconfined", "Localhost"];
const PROC_MOUNTS: [&str; 2] = ["Default", "Unmasked"];

/// The pod's own security context.
pub(super) fn validate_pod(spec: &PodSpec, path: &FieldPath, errs: &mut FieldErrors) {
    if spec.host_users == Some(false) {
        errs.push(FieldError::forbidden(
            &path.child("hostUsers"),
            "podvisor does not run pods in user namespaces",
        ));
    }
    let Some(sc) = &spec.security_context else {
        return;
    };
    let path = path.child("securityContext");
    shared(
        Shared {
            windows: sc.windows_options.is_some(),
            seccomp: sc.seccomp_profile.as_ref(),
            apparmor: sc.app_armor_profile.as_ref(),
        },
        &path,
        errs,
    );
    if sc.supplemental_groups_policy.as_deref() == Some("Strict") {
        errs.push(FieldError::forbidden(
            &path.child("supplementalGroupsPolicy"),
            "podvisor supports only Merge (the runtime's default)",
        ));
    }
    sysctls(spec, sc, &path, errs);
    let groups = sc.supplemental_groups.iter().flatten().copied();
    ids(
        [
            ("runAsUser", sc.run_as_user),
            ("runAsGroup", sc.run_as_group),
            ("fsGroup", sc.fs_group),
        ]
        .into_iter()
        .chain(groups.map(|g| ("supplementalGroups", Some(g)))),
        &path,
        errs,
    );
}

/// A container's security context.
pub(super) fn validate_container(c: &Container, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(sc) = &c.security_context else {
        return;
    };
    let path = path.child("securityContext");
    shared(
        Shared {
            windows: sc.windows_options.is_some(),
            seccomp: sc.seccomp_profile.as_ref(),
            apparmor: sc.app_armor_profile.as_ref(),
        },
        &path,
        errs,
    );
    capabilities(sc, &path, errs);
    ids(
        [
            ("runAsUser", sc.run_as_user),
            ("runAsGroup", sc.run_as_group),
        ],
        &path,
        errs,
    );
    if let Some(p) = sc.proc_mount.as_deref() {
        match p {
            "Default" => {}
            "Unmasked" => errs.push(FieldError::forbidden(
                &path.child("procMount"),
                "an unmasked /proc needs a user namespace (hostUsers: false), which podvisor does not create",
            )),
            other => errs.push(FieldError::not_supported(
                &path.child("procMount"),
                other,
                &PROC_MOUNTS,
            )),
        }
    }
}

/// User and group IDs are those of the kernel's non-negative 31-bit range, as Kubernetes
/// validates them.
fn ids<'a>(
    fields: impl IntoIterator<Item = (&'a str, Option<i64>)>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    for (name, id) in fields {
        if let Some(id) = id.filter(|id| !(0..=i64::from(i32::MAX)).contains(id)) {
            errs.push(FieldError::invalid_number(
                &path.child(name),
                id,
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
}

/// What pod and container security contexts have alike.
struct Shared<'a> {
    windows: bool,
    seccomp: Option<&'a SeccompProfile>,
    apparmor: Option<&'a AppArmorProfile>,
}

fn shared(s: Shared<'_>, path: &FieldPath, errs: &mut FieldErrors) {
    refuse_windows(s.windows, path, errs);
    seccomp(s.seccomp, path, errs);
    apparmor(s.apparmor, path, errs);
}

/// SELinux options are the runtime's to apply (where SELinux is enabled), as the kubelet
/// hands them over; Windows options have no Linux meaning.
fn refuse_windows(windows: bool, path: &FieldPath, errs: &mut FieldErrors) {
    if windows {
        errs.push(FieldError::forbidden(
            &path.child("windowsOptions"),
            "podvisor runs Linux containers only",
        ));
    }
}

fn capabilities(sc: &SecurityContext, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(caps) = &sc.capabilities else {
        return;
    };
    let escalation = path.child("allowPrivilegeEscalation");
    let path = path.child("capabilities");
    for (field, list) in [("add", &caps.add), ("drop", &caps.drop)] {
        for (i, cap) in list.iter().flatten().enumerate() {
            let ok = !cap.is_empty()
                && cap.len() <= 64
                && cap
                    .chars()
                    .all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_');
            if !ok {
                errs.push(FieldError::invalid(
                    &path.child(field).index(i),
                    cap,
                    "must be a capability name such as NET_ADMIN or ALL",
                ));
            }
        }
    }
    let adds_sys_admin = caps
        .add
        .iter()
        .flatten()
        .any(|c| c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN");
    let no_escalation = sc.allow_privilege_escalation == Some(false);
    if no_escalation && (adds_sys_admin || sc.privileged == Some(true)) {
        errs.push(FieldError::invalid(
            &escalation,
            "false",
            "cannot be false with privileged or CAP_SYS_ADMIN",
        ));
    }
}

fn seccomp(profile: Option<&SeccompProfile>, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(p) = profile else { return };
    let path = path.child("seccompProfile").child("type");
    match p.type_.as_str() {
        "RuntimeDefault" | "Unconfined" => {}
        "Localhost" => errs.push(FieldError::forbidden(
            &path,
            "podvisor keeps no seccomp profiles on the node: use RuntimeDefault",
        )),
        other => errs.push(FieldError::not_supported(&path, other, &SECCOMP_TYPES)),
    }
}

fn apparmor(profile: Option<&AppArmorProfile>, path: &FieldPath, errs: &mut FieldErrors) {
    let Some(p) = profile else { return };
    let path = path.child("appArmorProfile");
    match p.type_.as_str() {
        "RuntimeDefault" | "Unconfined" => {}
        "Localhost"
            if p.localhost_profile
                .as_deref()
                .is_some_and(|n| !n.is_empty()) => {}
        "Localhost" => errs.push(FieldError::required(
            &path.child("localhostProfile"),
            "must be set when type is Localhost",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &APPARMOR_TYPES,
        )),
    }
}

/// `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` segments joined by `.` or `/`, 253 characters at most
/// (kube-apiserver's `IsValidSysctlName`); which of them the node sets is its admission's
/// business (`node_admit::intrinsic`, `SysctlForbidden`), as with the kubelet.
fn valid_sysctl_name(name: &str) -> bool {
    let segment = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    name.len() <= 253 && name.split(['.', '/']).all(segment)
}

fn sysctls(spec: &PodSpec, sc: &PodSecurityContext, path: &FieldPath, errs: &mut FieldErrors) {
    let mut seen = std::collections::HashSet::new();
    for (i, s) in sc.sysctls.iter().flatten().enumerate() {
        let name = dotted_sysctl(&s.name);
        let at = path.child("sysctls").index(i).child("name");
        if !valid_sysctl_name(&s.name) {
            errs.push(FieldError::invalid(
                &at,
                &s.name,
                "must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?",
            ));
        } else if !seen.insert(name.clone()) {
            errs.push(FieldError::duplicate(&at, &s.name));
        } else if name.starts_with("net.") && spec.host_network == Some(true) {
            errs.push(FieldError::invalid(
                &at,
                &s.name,
                "may not be specified when 'hostNetwork' is true",
            ));
        } else if (name.starts_with("kernel.shm")
            || name.starts_with("kernel.msg")
            || name.starts_with("kernel.sem")
            || name.starts_with("fs.mqueue."))
            && spec.host_ipc == Some(true)
        {
            errs.push(FieldError::invalid(
                &at,
                &s.name,
                "may not be specified when 'hostIPC' is true",
            ));
        }
    }
}
