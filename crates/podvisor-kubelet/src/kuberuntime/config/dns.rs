//! A pod's resolver settings, as the kubelet makes them (`GetPodDNS`): by `dnsPolicy`, the
//! node's cluster DNS (`ClusterFirst`, and `ClusterFirstWithHostNet` for host-network
//! pods) with the cluster's search domains and `ndots:5`, or the host's resolver settings
//! (`Default`, and `ClusterFirst` on a node without cluster DNS, as the kubelet falls back),
//! or nothing (`None`); then `dnsConfig` merged in.

use k8s_openapi::api::core::v1::{Pod, PodDNSConfig};
use podvisor_core::PodExt;
use podvisor_cri::proto::DnsConfig;

use super::NodeConfig;

/// What the policy resolves to on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DnsType {
    Cluster,
    /// The host's resolver settings: `Default`, and `ClusterFirst` on a node without
    /// cluster DNS (the kubelet's fallback).
    Host,
    None,
}

fn dns_type(node: &NodeConfig, pod: &Pod) -> DnsType {
    let policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.dns_policy.as_deref())
        .unwrap_or("ClusterFirst");
    let cluster = match policy {
        "None" => return DnsType::None,
        "Default" => return DnsType::Host,
        "ClusterFirstWithHostNet" => true,
        _ => !pod.host_network(),
    };
    if cluster && !node.cluster_dns.is_empty() {
        DnsType::Cluster
    } else {
        DnsType::Host
    }
}

fn push_unique(into: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for m in more {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

/// `dnsConfig` on top: nameservers and searches appended (no duplicates), options
/// replacing those of the same name.
fn merge(dns: &mut DnsConfig, extra: &PodDNSConfig) {
    push_unique(
        &mut dns.servers,
        extra.nameservers.clone().unwrap_or_default(),
    );
    push_unique(
        &mut dns.searches,
        extra.searches.clone().unwrap_or_default(),
    );
    for o in extra.options.iter().flatten() {
        let Some(name) = o.name.as_ref() else {
            continue;
        };
        dns.options
            .retain(|old| old.split(':').next() != Some(name.as_str()));
        dns.options.push(match &o.value {
            Some(v) => format!("{name}:{v}"),
            None => name.clone(),
        });
    }
}

/// The pod's resolver settings (`None`: the runtime's own, for a host-network pod on the
/// host's).
pub fn pod_dns(node: &NodeConfig, pod: &Pod) -> Option<DnsConfig> {
    let kind = dns_type(node, pod);
    let mut dns = match kind {
        DnsType::None => DnsConfig::default(),
        DnsType::Host => node.dns.clone().unwrap_or_default(),
        DnsType::Cluster => {
            let domain = &node.cluster_domain;
            let mut searches = vec![
                format!("{}.svc.{domain}", pod.namespace()),
                format!("svc.{domain}"),
                domain.clone(),
            ];
            push_unique(
                &mut searches,
                node.dns.iter().flat_map(|d| d.searches.clone()),
            );
            DnsConfig {
                servers: node.cluster_dns.clone(),
                searches,
                options: vec!["ndots:5".into()],
            }
        }
    };
    if let Some(extra) = pod.spec.as_ref().and_then(|s| s.dns_config.as_ref()) {
        merge(&mut dns, extra);
    }
    let host_files = pod.host_network() && kind == DnsType::Host;
    (!host_files || dns != node.dns.clone().unwrap_or_default()).then_some(dns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cluster_dns: &[&str]) -> NodeConfig {
        NodeConfig {
            node_name: "n".into(),
            pod_log_dir: "/l".into(),
            pod_dir: "/p".into(),
            dns: Some(DnsConfig {
                servers: vec!["192.0.2.53".into()],
                searches: vec!["corp.example".into()],
                options: vec!["ndots:1".into()],
            }),
            cluster_dns: cluster_dns.iter().map(|s| s.to_string()).collect(),
            cluster_domain: "cluster.local".into(),
            memory_capacity: 4 << 30,
            pod_cgroups: None,
            container_links_dir: None,
        }
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "shop"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn cluster_first_uses_the_cluster_s_dns_and_search_domains() {
        let p = pod(serde_json::json!({"containers": []}));
        let dns = pod_dns(&node(&["10.96.0.10"]), &p).unwrap();
        assert_eq!(dns.servers, ["10.96.0.10"]);
        assert_eq!(
            dns.searches,
            [
                "shop.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "corp.example"
            ]
        );
        assert_eq!(dns.options, ["ndots:5"]);
        assert_eq!(dns_type(&node(&[]), &p), DnsType::Host);
        assert_eq!(pod_dns(&node(&[]), &p).unwrap().servers, ["192.0.2.53"]);
    }

    #[test]
    fn none_takes_only_dns_config_and_options_replace_by_name() {
        let p = pod(
            serde_json::json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {
            "nameservers": ["1.1.1.1", "1.1.1.1"], "searches": ["a.example"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}}),
        );
        let dns = pod_dns(&node(&["10.96.0.10"]), &p).unwrap();
        assert_eq!(dns.servers, ["1.1.1.1"]);
        assert_eq!(dns.searches, ["a.example"]);
        assert_eq!(dns.options, ["ndots:2", "edns0"]);
        let host = pod(serde_json::json!({"containers": [], "dnsPolicy": "Default",
            "dnsConfig": {"options": [{"name": "ndots", "value": "3"}]}}));
        let dns = pod_dns(&node(&["10.96.0.10"]), &host).unwrap();
        assert_eq!(dns.servers, ["192.0.2.53"]);
        assert_eq!(dns.options, ["ndots:3"]);
    }

    #[test]
    fn host_network_pods_keep_the_host_s_files_unless_asked_otherwise() {
        let p = pod(serde_json::json!({"containers": [], "hostNetwork": true}));
        assert_eq!(pod_dns(&node(&["10.96.0.10"]), &p), None);
        let with = pod(serde_json::json!({"containers": [], "hostNetwork": true,
            "dnsPolicy": "ClusterFirstWithHostNet"}));
        assert_eq!(
            pod_dns(&node(&["10.96.0.10"]), &with).unwrap().servers,
            ["10.96.0.10"]
        );
    }
}
