use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::payload::FileProjection;

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("podvisor-writer-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn file(data: &str, mode: u32) -> FileProjection {
    FileProjection {
        data: data.as_bytes().to_vec(),
        mode,
        group: None,
    }
}

fn hidden_versions(d: &Path) -> usize {
    fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("..") && n != DATA
        })
        .count()
}

#[test]
fn files_appear_through_the_data_link_with_their_modes() {
    let d = dir("first");
    let p = Payload::from([
        ("a".to_string(), file("1", 0o644)),
        ("sub/b".to_string(), file("2", 0o600)),
    ]);
    assert!(write(&d, &p).unwrap());
    assert_eq!(fs::read_to_string(d.join("a")).unwrap(), "1");
    assert_eq!(fs::read_to_string(d.join("sub/b")).unwrap(), "2");
    assert_eq!(fs::read_link(d.join("a")).unwrap(), Path::new("..data/a"));
    assert_eq!(
        fs::read_link(d.join("sub")).unwrap(),
        Path::new("..data/sub")
    );
    let mode = fs::metadata(d.join("sub/b")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_same_payload_writes_nothing_and_a_change_swaps_versions() {
    let d = dir("swap");
    let one = Payload::from([("a".to_string(), file("1", 0o644))]);
    assert!(write(&d, &one).unwrap());
    let version = fs::read_link(d.join(DATA)).unwrap();
    assert!(!write(&d, &one).unwrap());
    assert_eq!(fs::read_link(d.join(DATA)).unwrap(), version);
    // A mode change alone is a change.
    let mode = Payload::from([("a".to_string(), file("1", 0o400))]);
    assert!(write(&d, &mode).unwrap());
    let two = Payload::from([("b".to_string(), file("2", 0o644))]);
    assert!(write(&d, &two).unwrap());
    assert!(
        fs::symlink_metadata(d.join("a")).is_err(),
        "a key removed is gone"
    );
    assert_eq!(fs::read_to_string(d.join("b")).unwrap(), "2");
    assert_eq!(hidden_versions(&d), 1, "old versions are removed");
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn an_empty_payload_is_an_empty_volume() {
    let d = dir("empty");
    assert!(write(&d, &Payload::new()).unwrap());
    assert!(!write(&d, &Payload::new()).unwrap());
    let visible = fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with(".."))
        .count();
    assert_eq!(visible, 0);
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn paths_outside_the_volume_are_refused() {
    let d = dir("hostile");
    for bad in ["../x", "/etc/passwd", "a/../../x", "..data/x", ""] {
        let p = Payload::from([(bad.to_string(), file("x", 0o644))]);
        assert!(write(&d, &p).is_err(), "{bad:?} accepted");
    }
    assert!(check_path("a/b.c").is_ok());
    assert!(check_path("dir/..x").is_ok());
    fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_group_is_given_and_a_group_change_is_a_change() {
    use std::os::unix::fs::MetadataExt;
    let d = dir("group");
    let mut p = Payload::from([("a".to_string(), file("1", 0o400))]);
    crate::payload::with_group(&mut p, Some(4321));
    assert!(write(&d, &p).unwrap());
    let meta = fs::metadata(d.join("a")).unwrap();
    assert_eq!(
        (meta.gid(), meta.permissions().mode() & 0o777),
        (4321, 0o440)
    );
    assert!(!write(&d, &p).unwrap());
    crate::payload::with_group(&mut p, Some(4322));
    assert!(write(&d, &p).unwrap());
    fs::remove_dir_all(d).unwrap();
}
