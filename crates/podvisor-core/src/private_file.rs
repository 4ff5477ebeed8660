//! Files only their owner may read (keys, tokens, kubeconfigs), written whole or not at
//! all: a temporary file of mode 0600 beside the target, synced, then renamed over it.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Writes `data` to `path`, readable by the owner only.
pub fn write(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    // A leftover temporary file keeps its mode through `open`: set it again.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_leftover_temporary_file_does_not_lend_its_mode() {
        let dir = std::env::temp_dir().join(format!("private-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        std::fs::write(dir.join("key.tmp"), b"old").unwrap();
        std::fs::set_permissions(dir.join("key.tmp"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        super::write(&path, b"secret").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"secret");
        assert!(!dir.join("key.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
