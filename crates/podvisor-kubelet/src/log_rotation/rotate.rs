//! The file work of rotating one container's log, as the kubelet's container log manager
//! does it: the full log is renamed `<n>.log.<YYYYMMDD-HHMMSS>`, the runtime reopens
//! `<n>.log`, and of the rotated files only the newest `max_files - 1` are kept. Plain
//! blocking functions, tested on temporary directories.

use std::io;
use std::path::{Path, PathBuf};

/// Whether the log at `path` has grown past `max_size` bytes.
pub(crate) fn too_big(path: &Path, max_size: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > max_size)
}

/// The rotated files of the log at `path`, oldest first (their names sort by time).
pub(crate) fn rotated(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix(&prefix)
                .is_some_and(|rest| !rest.is_empty() && !rest.ends_with(".tmp"))
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Removes the oldest rotated files so at most `keep` remain.
pub(crate) fn prune(path: &Path, keep: usize) -> io::Result<usize> {
    let old = rotated(path);
    let excess = old.len().saturating_sub(keep);
    for p in &old[..excess] {
        std::fs::remove_file(p)?;
    }
    Ok(excess)
}

/// Renames the log aside, named by `stamp` (a rotation in the same second gets a suffix);
/// where it went.
pub(crate) fn rename_aside(path: &Path, stamp: &str) -> io::Result<PathBuf> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut to = path.with_file_name(format!("{name}.{stamp}"));
    let mut n = 1;
    while to.exists() {
        to = path.with_file_name(format!("{name}.{stamp}-{n}"));
        n += 1;
    }
    std::fs::rename(path, &to)?;
    Ok(to)
}

/// Puts a rotated log back where it was (the runtime could not reopen it).
pub(crate) fn undo(path: &Path, rotated: &Path) -> io::Result<()> {
    std::fs::rename(rotated, path)
}

/// The kubelet's stamp for a rotated log: UTC `YYYYMMDD-HHMMSS`.
pub(crate) fn stamp(unix_secs: i64) -> String {
    let t = k8s_openapi::jiff::Timestamp::from_second(unix_secs).unwrap_or_default();
    t.strftime("%Y%m%d-%H%M%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_is_set_aside_and_only_the_newest_rotated_files_are_kept() {
        let dir = std::env::temp_dir().join(format!("podvisor-rotate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("0.log");
        std::fs::write(&log, vec![b'x'; 100]).unwrap();
        std::fs::write(dir.join("1.log"), b"another instance's").unwrap();
        assert!(too_big(&log, 99) && !too_big(&log, 100));
        assert_eq!(stamp(1_700_000_000), "20231114-221320");
        let first = rename_aside(&log, "20231114-221320").unwrap();
        assert!(!log.exists());
        std::fs::write(&log, b"new").unwrap();
        let second = rename_aside(&log, "20231114-221320").unwrap();
        assert_ne!(first, second, "two rotations in one second keep both");
        std::fs::write(&log, b"newer").unwrap();
        rename_aside(&log, "20231114-221321").unwrap();
        assert_eq!(rotated(&log).len(), 3);
        assert_eq!(prune(&log, 2).unwrap(), 1);
        assert_eq!(rotated(&log)[0], second, "the oldest went");
        undo(&log, &rotated(&log)[1]).unwrap();
        assert!(log.exists());
        assert!(
            dir.join("1.log").exists(),
            "other instances' logs are not touched"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
