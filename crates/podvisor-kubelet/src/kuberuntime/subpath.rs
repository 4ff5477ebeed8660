//! subPath mounts that cannot leave their volume (the kubelet's answer to CVE-2017-1002101
//! and CVE-2021-25741). A pod writes its volumes: a container that plants `x -> /` in an
//! emptyDir must not get the host's `/` in a container that mounts the volume with
//! `subPath: x`. So the subPath is resolved by the kernel beneath the volume's root
//! (`openat2` with `RESOLVE_BENEATH`: a symlink may point elsewhere inside the volume,
//! never out of it), and the file it opened is bind-mounted onto a path of podvisor's own
//! under the pod's directory, which is what the runtime is given. A symlink swapped in
//! after the check changes nothing: the mount holds the inode that was checked.
//!
//! Those mounts live until the pod's directory is removed, which unmounts everything
//! beneath it first ([`remove_tree`]): removing a directory through a bind mount would
//! delete the volume's files, or the host's.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::mount::UnmountFlags;

/// One subPath mount to prepare: the volume's root on the host, the subPath the pod asked
/// for, and where podvisor binds what it resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubPath {
    pub volume: String,
    pub root: PathBuf,
    pub sub: String,
    pub target: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum SubPathError {
    #[error(
        "subPath {sub:?} of volume {volume:?} leads outside the volume (through a symlink or '..')"
    )]
    Outside { volume: String, sub: String },
    #[error("subPath {sub:?} of volume {volume:?}: {action}: {source}")]
    Io {
        volume: String,
        sub: String,
        action: &'static str,
        source: io::Error,
    },
}

/// Resolves `s` beneath its volume (creating it as a directory when it does not exist, as
/// the kubelet does) and binds it onto its target, replacing what an earlier instance of
/// the container had there. Blocking.
pub(crate) fn bind(s: &SubPath) -> Result<(), SubPathError> {
    let err = |action| {
        move |source: io::Error| SubPathError::Io {
            volume: s.volume.clone(),
            sub: s.sub.clone(),
            action,
            source,
        }
    };
    let fd = match resolve(&s.root, &s.sub) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::XDEV) => {
            return Err(SubPathError::Outside {
                volume: s.volume.clone(),
                sub: s.sub.clone(),
            });
        }
        Err(e) => return Err(err("resolve beneath the volume")(e.into())),
    };
    let is_dir = rustix::fs::fstat(&fd)
        .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir())
        .map_err(|e| err("stat")(e.into()))?;
    unmount_all(&s.target).map_err(err("unmount the earlier bind"))?;
    make_target(&s.target, is_dir).map_err(err("make the bind target"))?;
    let source = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    rustix::mount::mount_bind(source.as_str(), &s.target).map_err(|e| err("bind-mount")(e.into()))
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// Opens `sub` beneath `root` (`O_PATH`, so a FIFO or a device is never opened for real);
/// missing directories are made one at a time, each beneath the last, with the volume
/// root's mode (setgid and sticky bits included, whatever the umask), as the kubelet's
/// `SafeMakeDir` makes them: a subPath of an fsGroup emptyDir is as writable as the volume.
fn resolve(root: &Path, sub: &str) -> rustix::io::Result<OwnedFd> {
    let path = OFlags::PATH | OFlags::CLOEXEC;
    let root = rustix::fs::open(root, path | OFlags::DIRECTORY, Mode::empty())?;
    match rustix::fs::openat2(&root, sub, path, Mode::empty(), BENEATH) {
        Err(rustix::io::Errno::NOENT) => {}
        other => return other,
    }
    let mode = Mode::from_raw_mode(rustix::fs::fstat(&root)?.st_mode & 0o7777);
    let mut dir = root;
    for part in Path::new(sub).iter() {
        let made = match rustix::fs::mkdirat(&dir, part, mode) {
            Ok(()) => true,
            Err(rustix::io::Errno::EXIST) => false,
            Err(e) => return Err(e),
        };
        dir = rustix::fs::openat2(&dir, part, path | OFlags::DIRECTORY, Mode::empty(), BENEATH)?;
        if made {
            // An O_PATH descriptor takes no fchmod: through its /proc link.
            let link = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
            rustix::fs::chmod(link.as_str(), mode)?;
        }
    }
    Ok(dir)
}

/// Unmounts everything stacked on `path` (nothing when it is no mount point).
fn unmount_all(path: &Path) -> io::Result<()> {
    loop {
        match rustix::mount::unmount(path, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            Ok(()) => {}
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// A directory or an empty file to bind onto, of the kind the subPath is.
fn make_target(target: &Path, dir: bool) -> io::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(target)
        && m.is_dir() != dir
    {
        if m.is_dir() {
            std::fs::remove_dir(target)?;
        } else {
            std::fs::remove_file(target)?;
        }
    }
    if dir {
        return std::fs::create_dir_all(target);
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)
        .map(drop)
}

/// Removes `dir` and everything in it, after unmounting whatever is mounted beneath it; a
/// mount that stays refuses the removal. Blocking.
pub fn remove_tree(dir: &Path) -> io::Result<()> {
    unmount_beneath(dir)?;
    std::fs::remove_dir_all(dir)
}

/// Unmounts whatever is mounted beneath `dir` (not `dir` itself), deepest first.
/// Blocking.
pub fn unmount_beneath(dir: &Path) -> io::Result<()> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut beneath: Vec<PathBuf> = mount_points(&info)
        .into_iter()
        .filter(|m| m.starts_with(dir) && m != dir)
        .collect();
    beneath.sort_by_key(|m| std::cmp::Reverse(m.as_os_str().len()));
    beneath.iter().try_for_each(|m| unmount_all(m))
}

/// The mount points listed in a `/proc/<pid>/mountinfo` text (the fifth field, with its
/// octal escapes for space, tab, newline and backslash undone).
fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .collect()
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(b) => {
                out.push(char::from(b));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("podvisor-subpath-{name}-{}", std::process::id()));
        let _ = remove_tree(&d);
        std::fs::create_dir_all(d.join("vol")).unwrap();
        d
    }

    #[test]
    fn mountinfo_paths_are_unescaped() {
        let info = "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw\n\
                    37 35 98:0 / /tmp/x\\134y rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mount_points(info),
            [PathBuf::from("/mnt/a b"), PathBuf::from("/tmp/x\\y")]
        );
    }

    #[test]
    fn a_subpath_resolves_inside_its_volume_and_is_made_when_missing() {
        let d = scratch("inside");
        let vol = d.join("vol");
        std::fs::create_dir(vol.join("real")).unwrap();
        std::os::unix::fs::symlink("real", vol.join("link")).unwrap();
        let fd = resolve(&vol, "link").unwrap();
        let st = rustix::fs::fstat(&fd).unwrap();
        let real = rustix::fs::stat(vol.join("real")).unwrap();
        assert_eq!((st.st_dev, st.st_ino), (real.st_dev, real.st_ino));
        resolve(&vol, "new/deeper").unwrap();
        assert!(vol.join("new/deeper").is_dir());
        remove_tree(&d).unwrap();
    }

    #[test]
    fn a_symlink_out_of_the_volume_is_refused() {
        let d = scratch("outside");
        let vol = d.join("vol");
        std::os::unix::fs::symlink("/", vol.join("root")).unwrap();
        std::os::unix::fs::symlink("../..", vol.join("up")).unwrap();
        std::os::unix::fs::symlink("/etc", vol.join("etc")).unwrap();
        for sub in ["root", "up", "etc/hostname", "root/tmp/new"] {
            let s = SubPath {
                volume: "v".into(),
                root: vol.clone(),
                sub: sub.into(),
                target: d.join("target"),
            };
            match bind(&s) {
                Err(SubPathError::Outside { .. }) => {}
                other => panic!("{sub}: {other:?}"),
            }
        }
        remove_tree(&d).unwrap();
    }

    /// Needs root (mounts), as the agent does.
    #[test]
    fn a_bind_holds_what_was_checked_and_goes_with_the_pods_directory() {
        let d = scratch("bind");
        let vol = d.join("vol");
        std::fs::create_dir(vol.join("dir")).unwrap();
        std::fs::write(vol.join("dir/f"), "inside").unwrap();
        std::fs::write(vol.join("file"), "file").unwrap();
        let pod = d.join("pod");
        let sub = |sub: &str, i: usize| SubPath {
            volume: "v".into(),
            root: vol.clone(),
            sub: sub.into(),
            target: pod.join(format!("volume-subpaths/v/c/{i}")),
        };
        let (dir, file) = (sub("dir", 0), sub("file", 1));
        bind(&dir).unwrap();
        bind(&file).unwrap();
        // A symlink swapped in after the bind changes nothing.
        std::fs::rename(vol.join("dir"), vol.join("moved")).unwrap();
        std::os::unix::fs::symlink("/", vol.join("dir")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.target.join("f")).unwrap(),
            "inside"
        );
        assert_eq!(std::fs::read_to_string(&file.target).unwrap(), "file");
        // A new instance of the container binds again, over nothing stale.
        std::fs::remove_file(vol.join("dir")).unwrap();
        std::fs::rename(vol.join("moved"), vol.join("dir")).unwrap();
        bind(&dir).unwrap();
        remove_tree(&pod).unwrap();
        assert!(!pod.exists());
        assert_eq!(
            std::fs::read_to_string(vol.join("dir/f")).unwrap(),
            "inside"
        );
        assert_eq!(std::fs::read_to_string(vol.join("file")).unwrap(), "file");
        remove_tree(&d).unwrap();
    }
}
