//! A pod's directories: its log directory (marked as podvisor's), its state directory, its
//! emptyDir volumes (a tmpfs for `medium: Memory`) and the hostPath directories it asks to
//! have created.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, EmptyDirVolumeSource};
use podvisor_core::{PodExt, SharedPod, quantity};

use super::super::{CriSyncError, CriSyncer};
use crate::kuberuntime::config::{empty_dir_path, pod_log_directory, pod_state_dir, sub_paths};
use crate::kuberuntime::{cleanup, subpath};

fn io(action: &'static str, path: &Path, source: std::io::Error) -> CriSyncError {
    CriSyncError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// An emptyDir as the kubelet makes it: writable by every user (`0777`; a tmpfs keeps its
/// sticky bit, `1777`, as the kubelet mounts it), and with an `fsGroup` owned by that
/// group, which new files inherit (setgid). Done once, when it is made (marked by a file
/// beside it), so what a container later does to it stands.
fn share_empty_dir(dir: &Path, fs_group: Option<i64>, sticky: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let marker = dir.with_file_name(format!(".{name}.ready"));
    if marker.exists() {
        return Ok(());
    }
    let mode = match fs_group {
        Some(gid) => {
            let gid = u32::try_from(gid).map_err(|_| std::io::ErrorKind::InvalidInput)?;
            std::os::unix::fs::chown(dir, None, Some(gid))?;
            0o2777
        }
        None => 0o777,
    } | if sticky { 0o1000 } else { 0 };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    std::fs::write(marker, b"")
}

/// An emptyDir with `medium: Memory`: a tmpfs, of its `sizeLimit` bytes when it has one.
struct Memory(Option<u64>);

fn memory(e: &EmptyDirVolumeSource) -> Option<Memory> {
    if e.medium.as_deref() != Some("Memory") {
        return None;
    }
    let size = e
        .size_limit
        .as_ref()
        .and_then(|q| quantity::parse_units(&q.0).ok());
    Some(Memory(size.and_then(|s| u64::try_from(s).ok())))
}

impl CriSyncer {
    fn pod_dirs(&self, pod: &SharedPod) -> Vec<PathBuf> {
        let mut dirs = vec![
            pod_log_directory(&self.node, pod),
            pod_state_dir(&self.node, pod.uid()),
        ];
        for v in pod.volumes() {
            if v.empty_dir.is_some() {
                dirs.push(empty_dir_path(&self.node, pod.uid(), &v.name));
            }
            if let Some(hp) = &v.host_path
                && hp.type_.as_deref() == Some("DirectoryOrCreate")
            {
                dirs.push(hp.path.clone().into());
            }
        }
        dirs
    }

    /// Makes the pod's directories (every sync, as the kubelet does: one removed under
    /// a running pod comes back), in one blocking call: each `tokio::fs` call is a
    /// hand-off to the blocking pool, and a sync made five of them.
    pub(crate) async fn make_dirs(&self, pod: &SharedPod) -> Result<(), CriSyncError> {
        let dirs = self.pod_dirs(pod);
        let empty_dirs: Vec<(PathBuf, Option<Memory>)> = pod
            .volumes()
            .iter()
            .filter_map(|v| Some((v, v.empty_dir.as_ref()?)))
            .map(|(v, e)| (empty_dir_path(&self.node, pod.uid(), &v.name), memory(e)))
            .collect();
        let fs_group = pod
            .spec
            .as_ref()
            .and_then(|s| s.security_context.as_ref())
            .and_then(|s| s.fs_group);
        let node = self.node.node_name.clone();
        tokio::task::spawn_blocking(move || {
            for d in &dirs {
                std::fs::create_dir_all(d).map_err(|e| io("create", d, e))?;
            }
            for (d, memory) in &empty_dirs {
                if let Some(Memory(size)) = memory {
                    podvisor_volumes::prepare_dir(d, Some(0o1777), *size)?;
                }
                share_empty_dir(d, fs_group, memory.is_some())
                    .map_err(|e| io("set the owner and mode of", d, e))?;
            }
            cleanup::mark_log_dir(&node, &dirs[0]).map_err(|e| io("create", &dirs[0], e))
        })
        .await
        .map_err(|e| CriSyncError::Blocking(e.to_string()))?
    }

    /// Binds container `c`'s subPaths, each resolved beneath its volume, where its config
    /// told the runtime to find them.
    pub(crate) async fn bind_sub_paths(
        &self,
        pod: &SharedPod,
        c: &Container,
    ) -> Result<(), CriSyncError> {
        let subs = sub_paths(&self.node, pod, c).map_err(CriSyncError::Config)?;
        if subs.is_empty() {
            return Ok(());
        }
        tokio::task::spawn_blocking(move || subs.iter().try_for_each(subpath::bind))
            .await
            .map_err(|e| CriSyncError::Blocking(e.to_string()))?
            .map_err(CriSyncError::SubPath)
    }

    /// Removes a deleted pod's state directory and logs, or a finished pod's volumes
    /// (unmounting what is mounted beneath first); a finished pod still in its config
    /// keeps its logs and termination messages until it is deleted.
    pub(crate) async fn remove_dirs(&self, pod: &SharedPod) -> Result<(), CriSyncError> {
        let dir = pod_state_dir(&self.node, pod.uid());
        // A pod that finished keeps its containers' termination messages (the statuses of
        // its kept containers are read with them) until it is deleted; its volumes go now,
        // as the kubelet unmounts a terminated pod's.
        let doomed = if pod.is_deleted() {
            vec![dir]
        } else {
            vec![dir.join("volumes"), dir.join("volume-subpaths")]
        };
        for dir in doomed {
            let d = dir.clone();
            let removed = tokio::task::spawn_blocking(move || subpath::remove_tree(&d))
                .await
                .map_err(|e| CriSyncError::Blocking(e.to_string()))?;
            match removed {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("remove", &dir, e));
                }
                _ => {}
            }
        }
        if pod.is_deleted() {
            let _ = tokio::fs::remove_dir_all(pod_log_directory(&self.node, pod)).await;
        }
        Ok(())
    }
}
