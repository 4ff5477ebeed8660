//! Writes a volume's files so a reader never sees half an update (the kubelet's
//! `AtomicWriter`): each version goes into a fresh hidden directory (`..<time>`), the
//! `..data` symlink is swapped to it with one rename, and each visible name is a symlink
//! through `..data`. A payload equal to what is there writes nothing. Blocking.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::VolumeError;
use crate::payload::Payload;

const DATA: &str = "..data";
const DATA_TMP: &str = "..data_tmp";

/// A path a payload may write: relative, no `..` element, not hidden behind a `..` name.
pub(crate) fn check_path(p: &str) -> Result<(), VolumeError> {
    let bad = || VolumeError::Path(p.to_string());
    let path = Path::new(p);
    if p.is_empty() || p.starts_with("..") || path.is_absolute() {
        return Err(bad());
    }
    if path.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(())
    } else {
        Err(bad())
    }
}

/// The first element of each path: the names visible in the volume.
fn visible(payload: &Payload) -> BTreeSet<String> {
    payload
        .keys()
        .filter_map(|p| p.split('/').next())
        .map(str::to_string)
        .collect()
}

/// Whether `dir` holds exactly `payload` (contents and modes).
fn holds(dir: &Path, payload: &Payload) -> bool {
    let same = payload.iter().all(|(p, f)| {
        let path = dir.join(p);
        let meta = fs::metadata(&path);
        let same_group = |m: &fs::Metadata| {
            f.group
                .is_none_or(|g| std::os::unix::fs::MetadataExt::gid(m) == g)
        };
        meta.is_ok_and(|m| m.permissions().mode() & 0o7777 == f.mode && same_group(&m))
            && fs::read(&path).is_ok_and(|d| d == f.data)
    });
    same && count_files(dir) == payload.len()
}

fn count_files(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => count_files(&e.path()),
            _ => 1,
        })
        .sum()
}

fn fresh_name() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("..{nanos}.{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> VolumeError + 'a {
    move |e| VolumeError::io(action, path, e)
}

fn write_version(dir: &Path, payload: &Payload) -> Result<(), VolumeError> {
    fs::create_dir(dir).map_err(io("create", dir))?;
    for (p, f) in payload {
        let path = dir.join(p);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io("create", parent))?;
        }
        fs::write(&path, &f.data).map_err(io("write", &path))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(f.mode))
            .map_err(io("set the mode of", &path))?;
        if let Some(gid) = f.group {
            std::os::unix::fs::chown(&path, None, Some(gid))
                .map_err(io("set the group of", &path))?;
        }
    }
    Ok(())
}

/// Makes `target` (an existing directory) hold `payload`. Whether anything changed.
pub fn write(target: &Path, payload: &Payload) -> Result<bool, VolumeError> {
    payload.keys().try_for_each(|p| check_path(p))?;
    let data = target.join(DATA);
    let old = fs::read_link(&data).ok();
    if let Some(old) = &old
        && holds(&target.join(old), payload)
    {
        link_visible(target, payload)?;
        return Ok(false);
    }
    let name = fresh_name();
    write_version(&target.join(&name), payload)?;
    let tmp = target.join(DATA_TMP);
    let _ = fs::remove_file(&tmp);
    symlink(&name, &tmp).map_err(io("link", &tmp))?;
    fs::rename(&tmp, &data).map_err(io("swap", &data))?;
    link_visible(target, payload)?;
    remove_stale(target, payload, old.as_deref())?;
    Ok(true)
}

/// Each visible name links through `..data`.
fn link_visible(target: &Path, payload: &Payload) -> Result<(), VolumeError> {
    for name in visible(payload) {
        let link = target.join(&name);
        if fs::symlink_metadata(&link).is_ok() {
            continue;
        }
        symlink(Path::new(DATA).join(&name), &link)
            .map_err(|e| VolumeError::io("link", &link, e))?;
    }
    Ok(())
}

/// Removes visible names the payload no longer has, and the previous version.
fn remove_stale(target: &Path, payload: &Payload, old: Option<&Path>) -> Result<(), VolumeError> {
    let keep = visible(payload);
    let entries = fs::read_dir(target).map_err(|e| VolumeError::io("read", target, e))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("..") || keep.contains(&name) {
            continue;
        }
        let _ = fs::remove_file(e.path());
    }
    if let Some(old) = old {
        let path = target.join(old);
        fs::remove_dir_all(&path).map_err(|e| VolumeError::io("remove", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
