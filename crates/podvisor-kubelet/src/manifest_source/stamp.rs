//! What tells a manifest file's content apart without reading it, so a rescan reads only
//! the files that changed: 500 manifests were parsed again every 20 s (and at every file
//! event), each into a new copy of its pods, although none had changed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A file's identity and last change. An edit in place changes its size or modification
/// time and its change time; a new file renamed over it has another inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// How long after its last change a file's stamp is trusted. File times move in clock
/// ticks (a few milliseconds), so two writes within one tick of the same length could
/// share a stamp; a file changed this recently is read at every scan instead.
pub(crate) const SETTLED_AFTER: Duration = Duration::from_secs(2);

impl Stamp {
    /// The stamp of `path` as it is now, if it settled (changed over [`SETTLED_AFTER`]
    /// before `now`); `None` if it cannot be read or changed too recently to tell.
    pub(crate) fn settled(path: &Path, now: SystemTime) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        let changed = m.modified().ok()?.max(
            SystemTime::UNIX_EPOCH
                + Duration::new(
                    u64::try_from(m.ctime()).ok()?,
                    u32::try_from(m.ctime_nsec()).ok()?,
                ),
        );
        if now.duration_since(changed).unwrap_or_default() < SETTLED_AFTER {
            return None;
        }
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}
