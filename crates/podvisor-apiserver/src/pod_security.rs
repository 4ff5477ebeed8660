//! Pod Security admission: a pod created through the API (by a client or a controller) is
//! checked against the Pod Security Standards at its namespace's level, the label
//! `pod-security.kubernetes.io/enforce` (`privileged`, `baseline`, `restricted`; an
//! unknown value is taken as `restricted`, failing closed), or the agent's default
//! (`[api] pod_security`, `baseline`), and refused with every violation named (403, cause
//! `PodSecurity`), as the API server's PodSecurity admission does. Mirror pods (the node's
//! static pods, from root-owned files) keep the power their files give them; a client's
//! pod that carries the mirror annotation to slip past is stored but never run (the node
//! runs API pods without it only).
//!
//! The checks are those of the standards' `latest` version that apply to what podvisor
//! runs (Windows and user-namespace fields are refused by validation anyway).

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{
    Container, Namespace, Pod, PodSpec, SELinuxOptions, SecurityContext, Volume,
};
use podvisor_client::{AnyObject, Error, Subresource};
use podvisor_core::Kind;
use podvisor_core::validation::security::{SAFE_SYSCTLS, dotted_sysctl};
use podvisor_store::{Admission, Objects, Resource, StoredObject};
use serde::Deserialize;
use serde_json::Value;

/// The label that sets a namespace's level.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// A label's value; an unknown one fails closed.
    fn of_label(v: &str) -> Level {
        match v {
            "privileged" => Level::Privileged,
            "baseline" => Level::Baseline,
            _ => Level::Restricted,
        }
    }
}

/// Capabilities a baseline pod may add: the container runtimes' defaults.
const BASELINE_CAPS: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Every container of the pod, ephemeral ones as the containers they run as.
fn all_containers(spec: &PodSpec) -> impl Iterator<Item = Cow<'_, Container>> {
    let ephemeral = spec.ephemeral_containers.iter().flatten();
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(Cow::Borrowed)
        .chain(ephemeral.map(|ec| Cow::Owned(podvisor_core::pod::ephemeral_as_container(ec))))
}

fn sc(c: &Container) -> SecurityContext {
    c.security_context.clone().unwrap_or_default()
}

fn cap_name(c: &str) -> &str {
    c.strip_prefix("CAP_").unwrap_or(c)
}

/// What a baseline pod must not do, each as the standards name it.
fn baseline(spec: &PodSpec, out: &mut Vec<String>) {
    for (set, field) in [
        (spec.host_network, "hostNetwork"),
        (spec.host_pid, "hostPID"),
        (spec.host_ipc, "hostIPC"),
    ] {
        if set == Some(true) {
            out.push(format!("host namespaces ({field}=true)"));
        }
    }
    for v in spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.host_path.is_some())
    {
        out.push(format!("hostPath volumes (volume {:?})", v.name));
    }
    let pod_sc = spec.security_context.clone().unwrap_or_default();
    if pod_sc
        .seccomp_profile
        .as_ref()
        .is_some_and(|p| p.type_ == "Unconfined")
    {
        out.push("seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")".into());
    }
    if pod_sc
        .app_armor_profile
        .as_ref()
        .is_some_and(|p| p.type_ == "Unconfined")
    {
        out.push("appArmorProfile (pod must not set securityContext.appArmorProfile.type to \"Unconfined\")".into());
    }
    for s in pod_sc.sysctls.iter().flatten() {
        if !SAFE_SYSCTLS.contains(&dotted_sysctl(&s.name).as_str()) {
            out.push(format!("forbidden sysctls ({})", s.name));
        }
    }
    selinux(None, pod_sc.se_linux_options.as_ref(), out);
    for c in all_containers(spec) {
        baseline_container(&c, out);
    }
}

/// SELinux types a baseline pod may ask for (the container runtimes' own), and no user
/// or role.
const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn selinux(container: Option<&str>, o: Option<&SELinuxOptions>, out: &mut Vec<String>) {
    let Some(o) = o else { return };
    let mut wrong = Vec::new();
    if let Some(t) = o.type_.as_deref().filter(|t| !SELINUX_TYPES.contains(t)) {
        wrong.push(format!("type {t:?}"));
    }
    if o.user.as_deref().is_some_and(|u| !u.is_empty()) {
        wrong.push("user may not be set".to_string());
    }
    if o.role.as_deref().is_some_and(|r| !r.is_empty()) {
        wrong.push("role may not be set".to_string());
    }
    if wrong.is_empty() {
        return;
    }
    let who = container.map_or("pod".to_string(), |c| format!("container {c:?}"));
    out.push(format!(
        "seLinuxOptions ({who} set forbidden securityContext.seLinuxOptions: {})",
        wrong.join("; ")
    ));
}

fn baseline_container(c: &Container, out: &mut Vec<String>) {
    let s = sc(c);
    let name = &c.name;
    if s.privileged == Some(true) {
        out.push(format!(
            "privileged (container {name:?} must not set securityContext.privileged=true)"
        ));
    }
    for add in s.capabilities.iter().flat_map(|c| c.add.iter().flatten()) {
        if !BASELINE_CAPS.contains(&cap_name(add)) {
            out.push(format!("non-default capabilities (container {name:?} must not include {add:?} in securityContext.capabilities.add)"));
        }
    }
    for p in c
        .ports
        .iter()
        .flatten()
        .filter_map(|p| p.host_port.filter(|h| *h != 0))
    {
        out.push(format!("hostPort (container {name:?} uses hostPort {p})"));
    }
    if s.proc_mount.as_deref().is_some_and(|m| m != "Default") {
        out.push(format!(
            "procMount (container {name:?} must not set securityContext.procMount to {:?})",
            s.proc_mount.unwrap_or_default()
        ));
    }
    if s.seccomp_profile
        .as_ref()
        .is_some_and(|p| p.type_ == "Unconfined")
    {
        out.push(format!("seccompProfile (container {name:?} must not set securityContext.seccompProfile.type to \"Unconfined\")"));
    }
    if s.app_armor_profile
        .as_ref()
        .is_some_and(|p| p.type_ == "Unconfined")
    {
        out.push(format!("appArmorProfile (container {name:?} must not set securityContext.appArmorProfile.type to \"Unconfined\")"));
    }
    selinux(Some(name), s.se_linux_options.as_ref(), out);
    for host in handler_hosts(c) {
        out.push(format!(
            "probe or lifecycle host (container {name:?} uses probe or lifecycle host {host:?})"
        ));
    }
}

/// The `host` of every probe and lifecycle handler: the node would connect there on the
/// pod's behalf (to anything the node can reach, its own loopback included). Baseline
/// allows none, as the standards have since Kubernetes 1.34 ("Host Probes / Lifecycle
/// Hooks": only undefined or "").
fn handler_hosts(c: &Container) -> Vec<String> {
    let v = serde_json::to_value(c).unwrap_or_default();
    let mut hosts = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        hosts.extend(handler_host(&v[probe]));
    }
    for hook in ["postStart", "preStop"] {
        hosts.extend(handler_host(&v["lifecycle"][hook]));
    }
    hosts
}

fn handler_host(handler: &Value) -> Vec<String> {
    ["httpGet", "tcpSocket"]
        .iter()
        .filter_map(|k| handler[k]["host"].as_str())
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
}

/// What a restricted pod must also do.
fn restricted(spec: &PodSpec, out: &mut Vec<String>) {
    let pod_sc = spec.security_context.clone().unwrap_or_default();
    // The standards' allowed volume types (hostPath is baseline's to refuse).
    let allowed = |v: &&Volume| {
        v.config_map.is_some()
            || v.csi.is_some()
            || v.downward_api.is_some()
            || v.empty_dir.is_some()
            || v.ephemeral.is_some()
            || v.persistent_volume_claim.is_some()
            || v.projected.is_some()
            || v.secret.is_some()
            || v.host_path.is_some()
    };
    for v in spec.volumes.iter().flatten().filter(|v| !allowed(v)) {
        out.push(format!("restricted volume types (volume {:?})", v.name));
    }
    if pod_sc.run_as_user == Some(0) {
        out.push("runAsUser=0 (pod must not set runAsUser=0)".into());
    }
    for c in all_containers(spec) {
        let s = sc(&c);
        let name = &c.name;
        if s.allow_privilege_escalation != Some(false) {
            out.push(format!("allowPrivilegeEscalation != false (container {name:?} must set securityContext.allowPrivilegeEscalation=false)"));
        }
        let caps = s.capabilities.clone().unwrap_or_default();
        if !caps.drop.iter().flatten().any(|d| cap_name(d) == "ALL") {
            out.push(format!("unrestricted capabilities (container {name:?} must set securityContext.capabilities.drop=[\"ALL\"])"));
        }
        for add in caps
            .add
            .iter()
            .flatten()
            .filter(|a| cap_name(a) != "NET_BIND_SERVICE")
        {
            out.push(format!("unrestricted capabilities (container {name:?} must not include {add:?} in securityContext.capabilities.add)"));
        }
        if s.run_as_non_root.or(pod_sc.run_as_non_root) != Some(true) {
            out.push(format!("runAsNonRoot != true (pod or container {name:?} must set securityContext.runAsNonRoot=true)"));
        }
        if s.run_as_user == Some(0) {
            out.push(format!(
                "runAsUser=0 (container {name:?} must not set runAsUser=0)"
            ));
        }
        let seccomp = s
            .seccomp_profile
            .as_ref()
            .or(pod_sc.seccomp_profile.as_ref());
        if !seccomp.is_some_and(|p| p.type_ == "RuntimeDefault" || p.type_ == "Localhost") {
            out.push(format!("seccompProfile (pod or container {name:?} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"));
        }
    }
}

/// Every violation of `level` by `pod`, in the standards' words.
pub fn violations(pod: &Pod, level: Level) -> Vec<String> {
    let mut out = Vec::new();
    let Some(spec) = &pod.spec else { return out };
    if level >= Level::Baseline {
        baseline(spec, &mut out);
    }
    if level >= Level::Restricted {
        restricted(spec, &mut out);
    }
    out.dedup();
    out
}

/// The admission check (see the module's documentation).
pub struct PodSecurity {
    default: Level,
}

impl PodSecurity {
    pub fn new(default: Level) -> Self {
        Self { default }
    }

    fn level(&self, store: &dyn Objects, ns: &str) -> Level {
        let label = store
            .get(Kind::Namespace, "", ns)
            .and_then(|o| o.typed::<Namespace>().ok())
            .and_then(|n| n.metadata.labels.as_ref()?.get(ENFORCE_LABEL).cloned());
        label.map_or(self.default, |v| Level::of_label(&v))
    }
}

impl Admission for PodSecurity {
    fn admit(
        &self,
        store: &dyn Objects,
        _: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
        sub: Subresource,
    ) -> Result<(), Error> {
        let AnyObject::Pod(pod) = object else {
            return Ok(());
        };
        // Updates change only images, tolerations, deadlines and the grace period, none of
        // it policed; but ephemeral containers added through their subresource are.
        let meta = &pod.metadata;
        let mirror = crate::admission::is_mirror(pod);
        if (old.is_some() && sub != Subresource::EphemeralContainers) || mirror {
            return Ok(());
        }
        let level = self.level(store, meta.namespace.as_deref().unwrap_or("default"));
        if level == Level::Privileged {
            return Ok(());
        }
        let found = violations(pod, level);
        if found.is_empty() {
            return Ok(());
        }
        Err(Error::Forbidden {
            resource: "pods".into(),
            name: meta.name.clone().unwrap_or_default(),
            cause: "PodSecurity".into(),
            message: format!(
                "violates PodSecurity \"{}:latest\": {}",
                level.name(),
                found.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests;
