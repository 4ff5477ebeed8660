//! Setting a pod's object volumes up on the host: each directory made (a tmpfs of its own
//! for what stays in memory, mounted once), then its payload written atomically.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use podvisor_core::PodExt;
use rustix::mount::{MountFlags, mount};

use crate::downward::PodFacts;
use crate::error::VolumeError;
use crate::payload::{Payload, with_group};
use crate::source::ObjectSource;
use crate::volumes::{in_memory, payload, volume_dir};
use crate::writer;

/// Whether `dir` is the root of a mount (its device differs from its parent's).
fn is_mount_point(dir: &Path) -> bool {
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev());
    match (dir.parent(), dev(dir)) {
        (Some(parent), Ok(d)) => dev(parent).is_ok_and(|p| p != d),
        _ => false,
    }
}

/// Makes `dir`; with a `memory` mode, a tmpfs of that mode is mounted on it (once; `size`
/// bytes at most when given) so nothing written there reaches a disk. Blocking.
pub fn prepare_dir(dir: &Path, memory: Option<u32>, size: Option<u64>) -> Result<(), VolumeError> {
    std::fs::create_dir_all(dir).map_err(|e| VolumeError::io("create", dir, e))?;
    let Some(mode) = memory.filter(|_| !is_mount_point(dir)) else {
        return Ok(());
    };
    let mut options = format!("mode={mode:o}");
    if let Some(size) = size {
        options.push_str(&format!(",size={size}"));
    }
    let options = std::ffi::CString::new(options)
        .map_err(|e| VolumeError::io("mount a tmpfs on", dir, std::io::Error::other(e)))?;
    mount(
        "tmpfs",
        dir,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(|e| VolumeError::io("mount a tmpfs on", dir, e.into()))
}

fn fs_group(f: &PodFacts) -> Option<u32> {
    let sc = f.pod.spec.as_ref()?.security_context.as_ref()?;
    u32::try_from(sc.fs_group?).ok()
}

fn set_up_before(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("..data")).is_ok()
}

/// One volume's work: its name, directory, whether in memory, and what it holds.
type Work = (String, PathBuf, bool, Payload);

/// Sets up every object volume of the pod (under `volumes_dir`, its
/// `<pod dir>/volumes`). The names of those whose files changed.
pub async fn set_up(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    volumes_dir: &Path,
) -> Result<Vec<String>, VolumeError> {
    let mut work: Vec<Work> = Vec::new();
    for v in f.pod.volumes() {
        let Some(dir) = volume_dir(volumes_dir, v) else {
            continue;
        };
        let mut p = match payload(source, f, v).await {
            Ok(p) => p.unwrap_or_default(),
            // The API is away and the volume was set up before: it keeps what it holds
            // (a restarted container finds its files), and is brought up to date later.
            Err(e) if e.is_unavailable() && set_up_before(&dir) => {
                tracing::warn!(volume = %v.name, error = %e, "the API is away; the volume keeps what it holds");
                continue;
            }
            Err(e) => return Err(e.in_volume(&v.name)),
        };
        with_group(&mut p, fs_group(f));
        work.push((v.name.clone(), dir, in_memory(v), p));
    }
    if work.is_empty() {
        return Ok(Vec::new());
    }
    tokio::task::spawn_blocking(move || {
        let mut changed = Vec::new();
        for (name, dir, memory, p) in work {
            let memory = memory.then_some(0o755);
            prepare_dir(&dir, memory, None).map_err(|e| e.in_volume(&name))?;
            if writer::write(&dir, &p).map_err(|e| e.in_volume(&name))? {
                changed.push(name);
            }
        }
        Ok(changed)
    })
    .await
    .map_err(|e| VolumeError::Blocking(e.to_string()))?
}
