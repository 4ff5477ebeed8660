//! A pod's directories: its log directory (marked as podvisor's), its state directory, its
//! emptyDir volumes and the hostPath directories it asks to have created.

use std::path::{Path, PathBuf};

use podvisor_core::{PodExt, SharedPod};

use super::super::cleanup;
use super::super::config::{empty_dir_path, pod_log_directory, pod_state_dir};
use super::super::syncer::{CriSyncError, CriSyncer};

fn io(action: &'static str, path: &Path, source: std::io::Error) -> CriSyncError {
    CriSyncError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
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

    pub(crate) async fn make_dirs(&self, pod: &SharedPod) -> Result<(), CriSyncError> {
        let dirs = self.pod_dirs(pod);
        for d in &dirs {
            tokio::fs::create_dir_all(d)
                .await
                .map_err(|e| io("create", d, e))?;
        }
        cleanup::mark_log_dir(&self.node, &dirs[0])
            .await
            .map_err(|e| io("create", &dirs[0], e))
    }

    /// Removes the pod's state directory; a pod that was deleted loses its logs too (one
    /// still in its config, which completed, keeps them for `podvisor logs`).
    pub(crate) async fn remove_dirs(&self, pod: &SharedPod) -> Result<(), CriSyncError> {
        let dir = pod_state_dir(&self.node, pod.uid());
        match tokio::fs::remove_dir_all(&dir).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io("remove", &dir, e));
            }
            _ => {}
        }
        if pod.is_deleted() {
            let _ = tokio::fs::remove_dir_all(pod_log_directory(&self.node, pod)).await;
        }
        Ok(())
    }
}
