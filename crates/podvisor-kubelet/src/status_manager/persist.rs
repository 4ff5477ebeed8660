//! Statuses on disk: one JSON file per pod UID, replaced atomically (a temporary file,
//! then a rename), so an agent killed at any moment leaves either the old or the new file.
//!
//! Writing happens off the actor thread. The status manager marks pods dirty; one batch
//! at a time is written on the blocking pool, with each pod's newest record at the moment
//! the batch is taken, so many changes of one pod while a batch is being written cost one
//! write. A status lost to a crash before its write is recomputed at the pod's next sync.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use podvisor_core::PodUid;
use tracing::warn;

use crate::protocol::status::PodRecord;

#[derive(Debug, thiserror::Error)]
pub(crate) enum PersistError {
    #[error("cannot write pod status {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode pod status: {0}")]
    Encode(#[from] serde_json::Error),
}

#[derive(Debug, Clone)]
pub(crate) struct Disk {
    dir: PathBuf,
}

/// One pod's pending write: its record, or `None` to remove its file.
pub(crate) type Batch = Vec<(PodUid, Option<PodRecord>)>;

impl Disk {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, uid: &PodUid) -> PathBuf {
        self.dir.join(format!("{uid}.json"))
    }

    fn save(&self, uid: &PodUid, record: &PodRecord) -> Result<(), PersistError> {
        let path = self.path(uid);
        let err = |source| PersistError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(record)?).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }

    /// Writes a batch (blocking).
    pub(crate) fn write(&self, batch: Batch) {
        for (uid, record) in batch {
            match record {
                Some(r) => {
                    if let Err(e) = self.save(&uid, &r) {
                        warn!(pod_uid = %uid, error = %e, "pod status not persisted");
                    }
                }
                None => {
                    let _ = std::fs::remove_file(self.path(&uid));
                }
            }
        }
    }

    /// Every record on disk (blocking); unreadable files are skipped with a warning (a
    /// status is recomputed at the pod's next sync anyway).
    pub(crate) fn load(&self) -> BTreeMap<PodUid, PodRecord> {
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
                Ok((uid, r)) => {
                    out.insert(uid, r);
                }
                Err(why) => warn!(path = %path.display(), %why, "ignoring unreadable pod status"),
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("the record's pod has no UID")]
    NoUid,
}

fn read(path: &Path) -> Result<(PodUid, PodRecord), ReadError> {
    let r: PodRecord = serde_json::from_slice(&std::fs::read(path)?)?;
    let uid = r.pod.metadata.uid.as_deref().ok_or(ReadError::NoUid)?;
    Ok((PodUid::from(uid), r))
}

/// Which pods need writing, and whether a batch is being written now.
#[derive(Default)]
pub(crate) struct Dirty {
    uids: BTreeSet<PodUid>,
    writing: bool,
}

impl Dirty {
    pub(crate) fn mark(&mut self, uid: &PodUid) {
        self.uids.insert(uid.clone());
    }

    /// The next batch to write, if none is being written and something is dirty.
    pub(crate) fn take(&mut self, records: &BTreeMap<PodUid, PodRecord>) -> Option<Batch> {
        if self.writing || self.uids.is_empty() {
            return None;
        }
        self.writing = true;
        let uids = std::mem::take(&mut self.uids);
        Some(
            uids.into_iter()
                .map(|uid| {
                    let r = records.get(&uid).cloned();
                    (uid, r)
                })
                .collect(),
        )
    }

    /// The batch was written.
    pub(crate) fn written(&mut self) {
        self.writing = false;
    }

    pub(crate) fn len(&self) -> usize {
        self.uids.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    fn record(uid: &str, name: &str) -> PodRecord {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(name.into());
        PodRecord::new(Arc::new(p))
    }

    #[test]
    fn changes_during_a_write_coalesce_into_the_next_batch_with_the_newest_record() {
        let mut d = Dirty::default();
        let mut records = BTreeMap::new();
        let a = PodUid::from("a");
        records.insert(a.clone(), record("a", "v1"));
        d.mark(&a);
        let first = d.take(&records).unwrap();
        assert_eq!(first.len(), 1);
        // While it is written, the pod changes three times and another goes away.
        for v in ["v2", "v3", "v4"] {
            records.insert(a.clone(), record("a", v));
            d.mark(&a);
        }
        d.mark(&PodUid::from("gone"));
        assert!(d.take(&records).is_none(), "one batch at a time");
        d.written();
        let next = d.take(&records).unwrap();
        assert_eq!(next.len(), 2, "one write per pod");
        let newest = next[0].1.as_ref().unwrap();
        assert_eq!(newest.pod.metadata.name.as_deref(), Some("v4"));
        assert!(next[1].1.is_none(), "a forgotten pod's file is removed");
        d.written();
        assert!(d.take(&records).is_none());
    }

    #[test]
    fn records_round_trip_through_the_disk() {
        let dir = std::env::temp_dir().join(format!("podvisor-persist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let disk = Disk::new(dir.clone());
        disk.write(vec![
            (PodUid::from("a"), Some(record("a", "web"))),
            (PodUid::from("b"), Some(record("b", "db"))),
        ]);
        std::fs::write(dir.join("junk.json"), "{").unwrap();
        disk.write(vec![(PodUid::from("b"), None)]);
        let loaded = disk.load();
        assert_eq!(loaded.keys().map(PodUid::as_str).collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            loaded[&PodUid::from("a")].pod.metadata.name.as_deref(),
            Some("web")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
