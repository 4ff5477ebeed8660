//! Where podvisor keeps a pod's files, and the host's resolver settings pods get.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{PodExt, PodUid};
use podvisor_cri::proto::DnsConfig;

use super::NodeConfig;

/// `<pod_log_dir>/<namespace>_<name>_<uid>`, as the kubelet names it.
pub fn pod_log_directory(node: &NodeConfig, pod: &Pod) -> PathBuf {
    node.pod_log_dir.join(format!(
        "{}_{}_{}",
        pod.namespace(),
        pod.name(),
        pod.metadata.uid.as_deref().unwrap_or("")
    ))
}

pub(crate) fn pod_state_dir(node: &NodeConfig, uid: &PodUid) -> PathBuf {
    node.pod_dir.join(uid.as_str())
}

pub(crate) fn empty_dir_path(node: &NodeConfig, uid: &PodUid, volume: &str) -> PathBuf {
    pod_state_dir(node, uid)
        .join("volumes")
        .join("empty-dir")
        .join(volume)
}

/// The file instance `attempt` of `container` writes its termination message to.
pub(crate) fn termination_log_path(
    node: &NodeConfig,
    uid: &PodUid,
    container: &str,
    attempt: u32,
) -> PathBuf {
    pod_state_dir(node, uid)
        .join("containers")
        .join(container)
        .join(format!("{attempt}-termination-log"))
}

/// Where podvisor binds what the `index`-th volume mount of `container` resolved its
/// subPath to (`subpath.rs`), as the kubelet places it.
pub(crate) fn subpath_target(
    node: &NodeConfig,
    uid: &PodUid,
    volume: &str,
    container: &str,
    index: usize,
) -> PathBuf {
    pod_state_dir(node, uid)
        .join("volume-subpaths")
        .join(volume)
        .join(container)
        .join(index.to_string())
}

/// The host's resolver settings from a resolv.conf.
pub fn read_dns(path: &Path) -> Option<DnsConfig> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut dns = DnsConfig::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => dns.servers.extend(words.next().map(String::from)),
            Some("search") => dns.searches = words.map(String::from).collect(),
            Some("options") => dns.options.extend(words.map(String::from)),
            _ => {}
        }
    }
    Some(dns)
}
