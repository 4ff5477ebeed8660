//! The cluster's ConfigMaps and Secrets a node's pods read, kept where the agent finds them
//! again after its own restart while the cluster is away: a tmpfs of the agent's own (mode
//! 0700, bounded), so a Secret never reaches the node's disk; it outlives the agent's
//! process and goes with a reboot, as the pods' containers do. One file per object, written
//! whole and renamed into place; an object the cluster says is gone is removed.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::VolumeError;
use crate::setup::prepare_dir;

pub struct Keep {
    dir: PathBuf,
}

/// A name fit for a file of its own: what Kubernetes allows in a namespace or an object
/// name (a DNS subdomain), so no name reaches outside the directory.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

impl Keep {
    /// Mounts (once) a tmpfs of `size` bytes at `dir`. Blocking.
    pub fn open(dir: &Path, size: u64) -> Result<Self, VolumeError> {
        prepare_dir(dir, Some(0o700), Some(size))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, kind: &str, ns: &str, name: &str) -> Option<PathBuf> {
        (plain(ns) && plain(name)).then(|| self.dir.join(format!("{kind}_{ns}_{name}.json")))
    }

    /// Keeps what the cluster answered (`None`: it has no such object). A failure is
    /// logged: the keep is a fallback, never in the way.
    pub(crate) fn save<K: Serialize>(&self, kind: &str, ns: &str, name: &str, value: Option<&K>) {
        let Some(path) = self.path(kind, ns, name) else {
            return;
        };
        let r = match value {
            None => std::fs::remove_file(&path).or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            }),
            Some(v) => write(&path, v),
        };
        if let Err(e) = r {
            tracing::warn!(kind, ns, name, error = %e, "object not kept for an outage");
        }
    }

    /// What was kept of the object, if anything.
    pub(crate) fn load<K: DeserializeOwned>(&self, kind: &str, ns: &str, name: &str) -> Option<K> {
        let raw = std::fs::read(self.path(kind, ns, name)?).ok()?;
        serde_json::from_slice(&raw).ok()
    }
}

fn write<K: Serialize>(path: &Path, v: &K) -> std::io::Result<()> {
    let raw = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    podvisor_core::private_file::write(path, &raw)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn keep(test: &str) -> (Keep, PathBuf) {
        let dir = std::env::temp_dir().join(format!("podvisor-keep-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (Keep { dir: dir.clone() }, dir)
    }

    #[test]
    fn an_object_kept_is_found_again_and_gone_once_the_cluster_says_so() {
        let (k, dir) = keep("found");
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        k.save("ConfigMap", "ns1", "settings", Some(&cm));
        let back: Option<ConfigMap> = k.load("ConfigMap", "ns1", "settings");
        assert_eq!(back, Some(cm));
        k.save::<ConfigMap>("ConfigMap", "ns1", "settings", None);
        assert_eq!(k.load::<ConfigMap>("ConfigMap", "ns1", "settings"), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn names_cannot_reach_outside_the_keep() {
        let (k, dir) = keep("names");
        for (ns, name) in [("..", "x"), ("a/b", "x"), ("ns", "../../etc"), ("ns", "")] {
            k.save("Secret", ns, name, Some(&"v"));
            assert_eq!(k.load::<String>("Secret", ns, name), None);
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(dir);
    }
}
