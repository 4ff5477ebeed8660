//! A container's Linux security context (the kubelet's `determineEffectiveSecurityContext`
//! and `convertToRuntimeSecurityContext`): user and groups, privileges, capabilities,
//! seccomp and AppArmor profiles, `/proc` masking and the pod's namespaces. What podvisor
//! cannot honour was refused by validation; what depends on the node (AppArmor) is
//! refused here, before the container is created.

use std::sync::OnceLock;

use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, Pod, PodSecurityContext, PodSpec, SeccompProfile,
};
use podvisor_core::PodExt;
use podvisor_cri::proto::security_profile::ProfileType;
use podvisor_cri::proto::{
    Capability, Int64Value, LinuxContainerSecurityContext, NamespaceMode, NamespaceOption,
    SecurityProfile,
};

use super::ConfigError;

/// What the kubelet masks in `/proc` and `/sys` of every unprivileged container
/// (`procMount: Default`). Told nothing, containerd masks nothing.
pub(crate) const MASKED_PATHS: [&str; 12] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];

/// What the kubelet makes read-only: writing there reconfigures the node's kernel.
pub(crate) const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Whether the node's kernel enforces AppArmor (read once).
pub(crate) fn host_apparmor() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
            .is_ok_and(|v| v.trim() == "Y")
    })
}

fn profile(kind: ProfileType, localhost_ref: &str) -> SecurityProfile {
    SecurityProfile {
        profile_type: kind as i32,
        localhost_ref: localhost_ref.to_string(),
    }
}

/// The seccomp profile: the container's, else the pod's, else none (unconfined, the
/// kubelet's default without `seccompDefault`); a privileged container is unconfined.
fn seccomp(
    c: Option<&SeccompProfile>,
    pod: Option<&SeccompProfile>,
    privileged: bool,
) -> SecurityProfile {
    match c.or(pod).map(|p| p.type_.as_str()) {
        Some("RuntimeDefault") if !privileged => profile(ProfileType::RuntimeDefault, ""),
        _ => profile(ProfileType::Unconfined, ""),
    }
}

/// The AppArmor profile: the container's, else the pod's; none given is the runtime's
/// default where the node has AppArmor (as the kubelet does), nothing where it has not. A
/// profile asked for on a node without AppArmor cannot be honoured.
fn apparmor(
    c: Option<&AppArmorProfile>,
    pod: Option<&AppArmorProfile>,
    privileged: bool,
    host: bool,
) -> Result<Option<SecurityProfile>, ConfigError> {
    let Some(p) = c.or(pod) else {
        return Ok((host && !privileged).then(|| profile(ProfileType::RuntimeDefault, "")));
    };
    if p.type_ == "Unconfined" {
        return Ok(Some(profile(ProfileType::Unconfined, "")));
    }
    if !host {
        return Err(ConfigError::Unenforceable(format!(
            "AppArmor profile {:?} asked for, but AppArmor is not enabled on this node",
            p.type_
        )));
    }
    Ok(Some(match p.type_.as_str() {
        "Localhost" => profile(
            ProfileType::Localhost,
            p.localhost_profile.as_deref().unwrap_or_default(),
        ),
        _ => profile(ProfileType::RuntimeDefault, ""),
    }))
}

/// Capability names as containerd wants them (it adds the `CAP_` prefix itself).
fn caps(list: Option<&Vec<String>>) -> Vec<String> {
    list.into_iter()
        .flatten()
        .map(|c| c.strip_prefix("CAP_").unwrap_or(c).to_string())
        .collect()
}

/// The pod's namespaces, as its sandbox and every one of its containers are told them: the
/// network and IPC namespaces are the pod's (or the node's, with `hostNetwork` and
/// `hostIPC`); each container has a PID namespace of its own unless the pod shares one
/// (`shareProcessNamespace`) or takes the node's (`hostPID`). A container told nothing
/// gets containerd's default, the pod's PID namespace: every pod behaved as if it shared
/// one.
pub(crate) fn namespaces(spec: &PodSpec, host_net: bool) -> NamespaceOption {
    let mode = |host: bool, otherwise: NamespaceMode| {
        if host { NamespaceMode::Node } else { otherwise }
    };
    let pid_otherwise = if spec.share_process_namespace == Some(true) {
        NamespaceMode::Pod
    } else {
        NamespaceMode::Container
    };
    NamespaceOption {
        network: mode(host_net, NamespaceMode::Pod) as i32,
        pid: mode(spec.host_pid == Some(true), pid_otherwise) as i32,
        ipc: mode(spec.host_ipc == Some(true), NamespaceMode::Pod) as i32,
        ..Default::default()
    }
}

/// The pod's supplemental groups, with its `fsGroup` (which owns its emptyDirs).
pub(crate) fn supplemental_groups(pod_sc: &PodSecurityContext) -> Vec<i64> {
    pod_sc
        .supplemental_groups
        .iter()
        .flatten()
        .copied()
        .chain(pod_sc.fs_group)
        .collect()
}

/// SELinux options as CRI carries them: the runtime applies them where SELinux is enabled
/// and ignores them elsewhere, as with the kubelet.
pub(super) fn selinux(
    o: Option<&k8s_openapi::api::core::v1::SELinuxOptions>,
) -> Option<podvisor_cri::proto::SeLinuxOption> {
    o.map(|o| podvisor_cri::proto::SeLinuxOption {
        user: o.user.clone().unwrap_or_default(),
        role: o.role.clone().unwrap_or_default(),
        r#type: o.type_.clone().unwrap_or_default(),
        level: o.level.clone().unwrap_or_default(),
    })
}

pub(super) fn container_security(
    pod: &Pod,
    c: &Container,
    host_apparmor: bool,
) -> Result<LinuxContainerSecurityContext, ConfigError> {
    let sc = c.security_context.clone().unwrap_or_default();
    let pod_sc = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.clone())
        .unwrap_or_default();
    let privileged = sc.privileged.unwrap_or(false);
    let (masked, readonly) = if privileged {
        (Vec::new(), Vec::new())
    } else {
        let owned = |l: &[&str]| l.iter().map(|p| p.to_string()).collect();
        (owned(&MASKED_PATHS), owned(&READONLY_PATHS))
    };
    let capabilities = sc.capabilities.as_ref().map(|c| Capability {
        add_capabilities: caps(c.add.as_ref()),
        drop_capabilities: caps(c.drop.as_ref()),
        ..Default::default()
    });
    Ok(LinuxContainerSecurityContext {
        privileged,
        capabilities,
        run_as_user: sc
            .run_as_user
            .or(pod_sc.run_as_user)
            .map(|v| Int64Value { value: v }),
        run_as_group: sc
            .run_as_group
            .or(pod_sc.run_as_group)
            .map(|v| Int64Value { value: v }),
        supplemental_groups: supplemental_groups(&pod_sc),
        readonly_rootfs: sc.read_only_root_filesystem.unwrap_or(false),
        no_new_privs: sc.allow_privilege_escalation == Some(false),
        masked_paths: masked,
        readonly_paths: readonly,
        seccomp: Some(seccomp(
            sc.seccomp_profile.as_ref(),
            pod_sc.seccomp_profile.as_ref(),
            privileged,
        )),
        apparmor: apparmor(
            sc.app_armor_profile.as_ref(),
            pod_sc.app_armor_profile.as_ref(),
            privileged,
            host_apparmor,
        )?,
        namespace_options: pod
            .spec
            .as_ref()
            .map(|spec| namespaces(spec, pod.host_network())),
        // The container's own, else the pod's (`determineEffectiveSecurityContext`).
        selinux_options: selinux(
            sc.se_linux_options
                .as_ref()
                .or(pod_sc.se_linux_options.as_ref()),
        ),
        ..Default::default()
    })
}

/// The container's effective `runAsNonRoot` and `runAsUser` (its own, else the pod's).
fn non_root_and_user(pod: &Pod, c: &Container) -> (bool, Option<i64>) {
    let sc = c.security_context.as_ref();
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let non_root = sc
        .and_then(|s| s.run_as_non_root)
        .or(pod_sc.and_then(|s| s.run_as_non_root));
    let user = sc
        .and_then(|s| s.run_as_user)
        .or(pod_sc.and_then(|s| s.run_as_user));
    (non_root == Some(true), user)
}

/// Whether the container must not run as root (`runAsNonRoot`, its own or the pod's)
/// while no `runAsUser` says who it runs as: then the image's user decides, checked
/// before the container is created.
pub(crate) fn must_check_image_user(pod: &Pod, c: &Container) -> bool {
    non_root_and_user(pod, c) == (true, None)
}

/// The kubelet's `verifyRunAsNonRoot` for an explicit `runAsUser: 0` under
/// `runAsNonRoot`: the API admits the pod, the node refuses the container (a
/// CreateContainerConfigError with a Failed event, retried at every back-off).
pub(crate) fn check_explicit_user(pod: &Pod, c: &Container) -> Result<(), ConfigError> {
    if non_root_and_user(pod, c) != (true, Some(0)) {
        return Ok(());
    }
    let m = &pod.metadata;
    Err(ConfigError::Unenforceable(format!(
        "container's runAsUser breaks non-root policy (pod: \"{}_{}({})\", container: {})",
        m.name.as_deref().unwrap_or_default(),
        m.namespace.as_deref().unwrap_or("default"),
        m.uid.as_deref().unwrap_or_default(),
        c.name
    )))
}

/// The kubelet's `verifyRunAsNonRoot` against the image's user.
pub(crate) fn check_image_user(user: &podvisor_cri::ImageUser) -> Result<(), ConfigError> {
    let refuse = |why: String| Err(ConfigError::Unenforceable(why));
    match user {
        podvisor_cri::ImageUser::Uid(0) => {
            refuse("container has runAsNonRoot and image will run as root".into())
        }
        podvisor_cri::ImageUser::Uid(_) => Ok(()),
        podvisor_cri::ImageUser::Name(n) if n.is_empty() || n == "root" => {
            refuse("container has runAsNonRoot and image will run as root".into())
        }
        podvisor_cri::ImageUser::Name(n) => refuse(format!(
            "container has runAsNonRoot and image has non-numeric user ({n}), cannot verify user is non-root"
        )),
    }
}
