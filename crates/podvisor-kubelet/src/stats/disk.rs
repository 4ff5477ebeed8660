//! What is on the node's disks, as the kubelet's stats providers measure it: a
//! filesystem's size and free space (`statvfs`), and what a directory takes of it (its
//! allocated blocks and inodes, as `du` and `find | wc -l` count them).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_core::stats::FsStats;

/// The most entries one walk looks at: a volume of millions of empty files cannot make it
/// endless (the kubelet's `du` has no bound; past this, what was counted so far stands).
pub(crate) const MAX_ENTRIES: usize = 1 << 20;

/// What a directory takes on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Allocated bytes (blocks × 512), each inode counted once.
    pub bytes: u64,
    /// Inodes: the directory and everything beneath it.
    pub inodes: u64,
}

/// The space `dir` takes on disk, counting no further than `stop_above` bytes or
/// [`MAX_ENTRIES`] entries: symbolic links are not followed, a hard-linked inode counts
/// once, and nothing on another filesystem is entered.
pub(crate) fn usage(dir: &Path, stop_above: u64) -> Usage {
    let Ok(top) = dir.symlink_metadata() else {
        return Usage::default();
    };
    let mut u = Usage {
        bytes: top.blocks().saturating_mul(512),
        inodes: 1,
    };
    let mut pending = vec![dir.to_path_buf()];
    let mut seen = HashSet::new();
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if u.inodes as usize > MAX_ENTRIES {
                tracing::warn!(dir = %dir.display(), "over a million entries: the usage is counted in part");
                return u;
            }
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.nlink() > 1 && !seen.insert((m.dev(), m.ino())) {
                continue;
            }
            u.inodes += 1;
            u.bytes = u.bytes.saturating_add(m.blocks().saturating_mul(512));
            if u.bytes > stop_above {
                return u;
            }
            if m.is_dir() && m.dev() == top.dev() {
                pending.push(e.path());
            }
        }
    }
    u
}

/// The filesystem holding `path`: its size, what is free, and its inodes.
pub(crate) fn filesystem(path: &Path, at: &Time) -> Option<FsStats> {
    let v = rustix::fs::statvfs(path).ok()?;
    let unit = v.f_frsize.max(1);
    Some(FsStats {
        time: Some(at.clone()),
        available_bytes: Some(v.f_bavail.saturating_mul(unit)),
        capacity_bytes: Some(v.f_blocks.saturating_mul(unit)),
        used_bytes: Some(v.f_blocks.saturating_sub(v.f_bfree).saturating_mul(unit)),
        inodes_free: Some(v.f_ffree),
        inodes: Some(v.f_files),
        inodes_used: Some(v.f_files.saturating_sub(v.f_ffree)),
    })
}

/// What `dir` holds, on the filesystem that holds it.
pub(crate) fn used_on(fs: Option<&FsStats>, dir: &Path, at: &Time) -> FsStats {
    let u = usage(dir, u64::MAX);
    let mut out = fs.cloned().unwrap_or_default();
    out.time = Some(at.clone());
    out.used_bytes = Some(u.bytes);
    out.inodes_used = Some(u.inodes);
    out
}

/// Whether two paths are on one filesystem.
pub(crate) fn same_device(a: &Path, b: &Path) -> bool {
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_blocks_and_inodes_once_and_stops_early() {
        let dir = std::env::temp_dir().join(format!("podvisor-usage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), vec![1u8; 64 << 10]).unwrap();
        std::fs::hard_link(dir.join("sub/a"), dir.join("b")).unwrap();
        std::os::unix::fs::symlink("/usr", dir.join("out")).unwrap();
        let all = usage(&dir, u64::MAX);
        assert!(
            (64 << 10..(64 << 10) + (64 << 10)).contains(&all.bytes),
            "{all:?}"
        );
        assert_eq!(all.inodes, 4, "the dir, sub, a (b is a), the link");
        assert!(usage(&dir, 10).bytes > 10);
        assert_eq!(usage(&dir.join("nothing"), u64::MAX), Usage::default());
        let at = podvisor_core::time::now();
        let fs = filesystem(&dir, &at).unwrap();
        assert!(fs.capacity_bytes >= fs.available_bytes && fs.inodes.unwrap() > 0);
        let held = used_on(Some(&fs), &dir, &at);
        assert_eq!(
            (held.used_bytes, held.capacity_bytes),
            (Some(all.bytes), fs.capacity_bytes)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
