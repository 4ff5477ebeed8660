//! A pod's hostname, domain and `/etc/hosts`, as the kubelet makes them: the hostname is
//! `hostname` or the pod's name, the domain `<subdomain>.<namespace>.svc.<cluster domain>`
//! when a subdomain is set (and the hostname that FQDN with `setHostnameAsFQDN`); the hosts
//! file, which every container mounts, names the pod's addresses and adds `hostAliases`
//! (a host-network pod's is the node's own, plus its aliases).

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{PodExt, PodUid};

use super::NodeConfig;
use super::paths::pod_state_dir;

/// A pod name may have 253 characters, a hostname 64 (sethostname fails beyond): cut to
/// 63 and drop trailing '-' and '.', as the kubelet does.
fn truncate(mut name: String) -> String {
    if name.len() > 63 {
        // Validated names are ASCII; the boundary search only keeps a bad one from panicking.
        let cut = (0..=63)
            .rev()
            .find(|&i| name.is_char_boundary(i))
            .unwrap_or(0);
        name.truncate(cut);
        let trimmed = name.trim_end_matches(['-', '.']).len();
        name.truncate(trimmed);
    }
    name
}

/// The pod's hostname and, with a subdomain, its domain; `hostnameOverride` is the
/// hostname whatever else the pod says, and has no domain (the kubelet's
/// `GeneratePodHostNameAndDomain`).
pub(crate) fn host_and_domain(node: &NodeConfig, pod: &Pod) -> (String, Option<String>) {
    let spec = pod.spec.as_ref();
    if let Some(h) = spec.and_then(|s| s.hostname_override.clone()) {
        return (truncate(h), None);
    }
    // Validation keeps `hostname` short; cut anyway, never inside a character.
    let host = truncate(
        spec.and_then(|s| s.hostname.clone())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| pod.name().to_string()),
    );
    let domain = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}.{}.svc.{}", pod.namespace(), node.cluster_domain));
    (host, domain)
}

/// The hostname the sandbox gets: the FQDN with `setHostnameAsFQDN` and a domain (cut to
/// the 64 characters a hostname may have).
pub(crate) fn sandbox_hostname(node: &NodeConfig, pod: &Pod) -> String {
    let (host, domain) = host_and_domain(node, pod);
    let fqdn = pod.spec.as_ref().and_then(|s| s.set_hostname_as_fqdn) == Some(true);
    match domain {
        Some(d) if fqdn => truncate(format!("{host}.{d}")),
        _ => host,
    }
}

/// Where the pod's hosts file is.
pub(crate) fn etc_hosts_path(node: &NodeConfig, uid: &PodUid) -> PathBuf {
    pod_state_dir(node, uid).join("etc-hosts")
}

fn aliases(pod: &Pod) -> String {
    let list = pod.spec.as_ref().and_then(|s| s.host_aliases.as_deref());
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        return String::new();
    };
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for a in list {
        let names = a.hostnames.clone().unwrap_or_default().join("\t");
        out.push_str(&format!("{}\t{names}\n", a.ip));
    }
    out
}

/// The hosts file of a pod with addresses `ips`; `host_hosts` is the node's own file (for a
/// host-network pod).
pub(crate) fn hosts_file(
    node: &NodeConfig,
    pod: &Pod,
    ips: &[String],
    host_hosts: Option<&str>,
) -> String {
    if pod.host_network() {
        let mut out = String::from("# Kubernetes-managed hosts file (host network).\n");
        out.push_str(host_hosts.unwrap_or(""));
        out.push_str(&aliases(pod));
        return out;
    }
    let mut out = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    let (host, domain) = host_and_domain(node, pod);
    for ip in ips {
        match &domain {
            Some(d) => out.push_str(&format!("{ip}\t{host}.{d}\t{host}\n")),
            None => out.push_str(&format!("{ip}\t{host}\n")),
        }
    }
    out.push_str(&aliases(pod));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> NodeConfig {
        NodeConfig {
            node_name: "n".into(),
            pod_log_dir: "/l".into(),
            pod_dir: "/p".into(),
            dns: None,
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
            memory_capacity: 4 << 30,
            pod_cgroups: None,
            container_links_dir: None,
        }
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "shop"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn the_file_names_the_pod_and_its_aliases() {
        let p = pod(
            serde_json::json!({"containers": [], "hostname": "db", "subdomain": "sts",
            "hostAliases": [{"ip": "192.0.2.9", "hostnames": ["foo.local", "bar.local"]}]}),
        );
        let f = hosts_file(&node(), &p, &["10.88.0.4".into()], None);
        assert!(f.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"));
        assert!(
            f.contains("\n10.88.0.4\tdb.sts.shop.svc.cluster.local\tdb\n"),
            "{f}"
        );
        assert!(
            f.ends_with("\n# Entries added by HostAliases.\n192.0.2.9\tfoo.local\tbar.local\n"),
            "{f}"
        );
        let plain = pod(serde_json::json!({"containers": []}));
        let f = hosts_file(&node(), &plain, &["10.88.0.5".into()], None);
        assert!(
            f.ends_with("fe00::2\tip6-allrouters\n10.88.0.5\tweb-0\n"),
            "{f}"
        );
    }

    #[test]
    fn a_host_network_pod_gets_the_node_s_file_and_its_aliases() {
        let p = pod(serde_json::json!({"containers": [], "hostNetwork": true,
            "hostAliases": [{"ip": "192.0.2.9", "hostnames": ["foo"]}]}));
        let f = hosts_file(&node(), &p, &[], Some("127.0.0.1 localhost\n"));
        assert_eq!(
            f,
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n192.0.2.9\tfoo\n"
        );
    }

    #[test]
    fn the_fqdn_as_hostname_only_when_asked() {
        let p = pod(serde_json::json!({"containers": [], "subdomain": "sts"}));
        assert_eq!(sandbox_hostname(&node(), &p), "web-0");
        let fqdn = pod(
            serde_json::json!({"containers": [], "subdomain": "sts", "setHostnameAsFQDN": true}),
        );
        assert_eq!(
            sandbox_hostname(&node(), &fqdn),
            "web-0.sts.shop.svc.cluster.local"
        );
    }

    #[test]
    fn a_hostname_override_is_the_hostname_whatever_else_the_pod_says() {
        let p = pod(
            serde_json::json!({"containers": [], "hostname": "custom", "subdomain": "sts",
            "hostnameOverride": "override.example.host"}),
        );
        assert_eq!(
            host_and_domain(&node(), &p),
            ("override.example.host".to_string(), None)
        );
        assert_eq!(sandbox_hostname(&node(), &p), "override.example.host");
    }
}
