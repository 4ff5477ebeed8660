//! Directories left by pods nobody knows any more (the kubelet's orphaned pod directory
//! cleanup): a pod's volumes and logs outlive it when its manifest goes after it
//! completed, when it was an orphan from before a restart, or when the agent died between
//! stopping it and cleaning up. Housekeeping sweeps them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use podvisor_core::PodUid;

use super::config::NodeConfig;

/// Written into every pod log directory podvisor creates, holding the node name: the log
/// root may be shared with a kubelet, whose directories must never be swept.
pub(crate) const LOG_DIR_MARKER: &str = ".podvisor";

/// Writes the marker, naming node `node`, into a pod's log directory (once). Blocking.
pub(crate) fn mark_log_dir(node: &str, dir: &Path) -> std::io::Result<()> {
    let marker = dir.join(LOG_DIR_MARKER);
    if !marker.try_exists().unwrap_or(false) {
        std::fs::write(&marker, node)?;
    }
    Ok(())
}

/// The pod state directories and this node's pod log directories whose UID is not in
/// `known`. Blocking: reads both roots.
pub(crate) fn orphaned_dirs(node: &NodeConfig, known: &HashSet<PodUid>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // Known pods first: a pass over 500 running pods looks no further than their names.
    for e in read(&node.pod_dir) {
        let uid = e.file_name().to_string_lossy().into_owned();
        if !known.contains(uid.as_str()) && e.path().is_dir() {
            out.push(e.path());
        }
    }
    for e in read(&node.pod_log_dir) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((_, uid)) = name.rsplit_once('_') else {
            continue;
        };
        if known.contains(uid) {
            continue;
        }
        let ours = std::fs::read_to_string(e.path().join(LOG_DIR_MARKER))
            .is_ok_and(|n| n == node.node_name);
        if ours {
            out.push(e.path());
        }
    }
    out
}

/// The attempt number for a container with no instance in the runtime: after the
/// highest `<N>.log` its log directory already holds (the same UID running again, or a
/// runtime that lost its state), so a new instance never appends to an old one's file.
pub(crate) async fn first_attempt(container_log_dir: &Path) -> u32 {
    let mut names = Vec::new();
    if let Ok(mut dir) = tokio::fs::read_dir(container_log_dir).await {
        while let Ok(Some(e)) = dir.next_entry().await {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    attempt_after(&names)
}

fn attempt_after(log_names: &[String]) -> u32 {
    log_names
        .iter()
        .filter_map(|n| n.strip_suffix(".log")?.parse::<u32>().ok())
        .max()
        .map_or(0, |n| n.saturating_add(1))
}

fn read(dir: &Path) -> impl Iterator<Item = std::fs::DirEntry> {
    std::fs::read_dir(dir).into_iter().flatten().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_instance_starts_after_the_logs_already_there() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(attempt_after(&names(&[])), 0);
        assert_eq!(attempt_after(&names(&["0.log"])), 1);
        assert_eq!(
            attempt_after(&names(&["0.log", "3.log", "x.log", "2.log.tmp"])),
            4
        );
    }

    #[test]
    fn only_unknown_pods_directories_and_only_ours_are_orphaned() {
        let root = std::env::temp_dir().join(format!("podvisor-cleanup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let node = NodeConfig {
            node_name: "n1".into(),
            pod_log_dir: root.join("logs"),
            pod_dir: root.join("pods"),
            dns: None,
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
            memory_capacity: 4 << 30,
            pod_cgroups: None,
            container_links_dir: None,
        };
        for d in [
            "pods/known",
            "pods/gone",
            "logs/default_a-n1_known",
            "logs/default_b-n1_gone",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for d in ["logs/default_a-n1_known", "logs/default_b-n1_gone"] {
            std::fs::write(root.join(d).join(LOG_DIR_MARKER), "n1").unwrap();
        }
        // A kubelet's, and another agent's on the same root: never ours to remove.
        std::fs::create_dir_all(root.join("logs/default_c_kubelet")).unwrap();
        std::fs::create_dir_all(root.join("logs/default_d-n2_other")).unwrap();
        std::fs::write(
            root.join("logs/default_d-n2_other").join(LOG_DIR_MARKER),
            "n2",
        )
        .unwrap();

        let known = HashSet::from([PodUid::from("known")]);
        let mut found = orphaned_dirs(&node, &known);
        found.sort();
        assert_eq!(
            found,
            [root.join("logs/default_b-n1_gone"), root.join("pods/gone")]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
