//! What the status manager keeps per pod, and how it is written to disk: one JSON file per
//! pod UID, replaced atomically, so an agent killed at any moment leaves either the old or
//! the new file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};
use tracing::warn;

/// How many events are kept per pod.
pub const MAX_EVENTS: usize = 25;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodEvent {
    /// Milliseconds since the epoch of the last occurrence.
    pub time_unix_ms: u64,
    /// `Normal` or `Warning`.
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub count: u32,
}

/// A pod as `podvisor get pods` shows it: the spec it was given, its status, its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodRecord {
    pub pod: Arc<Pod>,
    #[serde(default)]
    pub events: Vec<PodEvent>,
}

impl PodRecord {
    pub fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or("")
    }

    pub fn record_event(&mut self, event: PodEvent) {
        if let Some(last) = self.events.last_mut()
            && last.reason == event.reason
            && last.message == event.message
        {
            last.count += 1;
            last.time_unix_ms = event.time_unix_ms;
            return;
        }
        self.events.push(event);
        if self.events.len() > MAX_EVENTS {
            self.events.remove(0);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write pod status {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode pod status: {0}")]
    Encode(#[from] serde_json::Error),
}

pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, uid: &str) -> PathBuf {
        self.dir.join(format!("{uid}.json"))
    }

    pub fn save(&self, record: &PodRecord) -> Result<(), StoreError> {
        let path = self.path(record.uid());
        let err = |source| StoreError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(record)?).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }

    pub fn remove(&self, uid: &str) {
        let _ = std::fs::remove_file(self.path(uid));
    }

    /// Every record on disk; unreadable files are skipped with a warning (a status is
    /// recomputed at the pod's next sync anyway).
    pub fn load(&self) -> BTreeMap<String, PodRecord> {
        let mut out = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some("json") {
                continue;
            }
            match read(&path) {
                Ok(r) => {
                    out.insert(r.uid().to_string(), r);
                }
                Err(why) => warn!(path = %path.display(), %why, "ignoring unreadable pod status"),
            }
        }
        out
    }
}

fn read(path: &Path) -> Result<PodRecord, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}
