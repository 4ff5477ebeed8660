//! `/var/log/containers/<pod>_<namespace>_<container>-<id>.log`: a symlink to each
//! container's log, where log shippers (Fluent Bit, Vector, Promtail) look for them, made
//! when the container is created and removed once it is gone, as the kubelet does. The
//! name is the kubelet's, so shippers parse pod, namespace and container out of it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The longest file name (ext4's 255) less `.log`: longer names are cut, as the kubelet cuts.
const MAX_STEM: usize = 255 - ".log".len();

/// The link's file name for a container.
pub(crate) fn name(pod: &str, namespace: &str, container: &str, id: &str) -> String {
    let mut stem = format!("{pod}_{namespace}_{container}-{id}");
    if stem.len() > MAX_STEM {
        let mut cut = MAX_STEM;
        while !stem.is_char_boundary(cut) {
            cut -= 1;
        }
        stem.truncate(cut);
    }
    format!("{stem}.log")
}

/// Points `dir/name` at `target`, replacing whatever link had that name; whether it had
/// to (the link was missing or pointed elsewhere).
pub(crate) fn make(dir: &Path, name: &str, target: &Path) -> io::Result<bool> {
    std::fs::create_dir_all(dir)?;
    let link = dir.join(name);
    if std::fs::read_link(&link).is_ok_and(|t| t == target) {
        return Ok(false);
    }
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(target, &link).map(|()| true)
}

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Swept {
    pub(crate) made: usize,
    pub(crate) removed: usize,
}

/// Makes `dir` hold a link for each of `wanted` (name → the container's log), and removes
/// the links into `pod_log_dir` that are not wanted (their container is gone) and, if
/// `foreign`, any other `.log` link whose target is gone (another agent's, left behind:
/// a look at each one's target, which the caller does less often).
pub(crate) fn sweep(
    dir: &Path,
    pod_log_dir: &Path,
    wanted: &BTreeMap<String, PathBuf>,
    foreign: bool,
) -> io::Result<Swept> {
    let mut swept = Swept::default();
    let mut present = BTreeMap::new();
    if dir.exists() {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Ok(target) = std::fs::read_link(entry.path()) {
                present.insert(name, target);
            }
        }
    }
    for (name, target) in &present {
        let unwanted = if target.starts_with(pod_log_dir) {
            wanted.get(name) != Some(target)
        } else {
            foreign && name.ends_with(".log") && !dir.join(target).exists()
        };
        if unwanted {
            std::fs::remove_file(dir.join(name))?;
            swept.removed += 1;
        }
    }
    for (name, target) in wanted {
        if present.get(name) != Some(target) && make(dir, name, target)? {
            swept.made += 1;
        }
    }
    Ok(swept)
}

/// Between sweeps, without reading `dir`: removes the links wanted at the last pass
/// (`before`) and no longer, and makes those wanted now and not then.
pub(crate) fn update(
    dir: &Path,
    before: &BTreeMap<String, PathBuf>,
    wanted: &BTreeMap<String, PathBuf>,
) -> io::Result<Swept> {
    let mut swept = Swept::default();
    for (name, target) in before {
        if wanted.get(name) == Some(target) {
            continue;
        }
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => swept.removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    for (name, target) in wanted {
        if before.get(name) != Some(target) && make(dir, name, target)? {
            swept.made += 1;
        }
    }
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("podvisor-links-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_name_is_the_kubelet_s_and_is_cut_to_fit_a_file_name() {
        assert_eq!(
            name("web-0", "prod", "nginx", "abc"),
            "web-0_prod_nginx-abc.log"
        );
        let long = name(&"p".repeat(253), "ns", "c", &"f".repeat(64));
        assert_eq!(long.len(), 255);
        assert!(long.ends_with(".log"));
    }

    #[test]
    fn a_sweep_makes_what_is_wanted_and_removes_only_what_is_ours_and_gone() {
        let root = tmp("sweep");
        let (links, pods) = (root.join("containers"), root.join("pods"));
        let live = pods.join("ns_a_u1/c/0.log");
        std::fs::create_dir_all(live.parent().unwrap()).unwrap();
        std::fs::write(&live, "hello\n").unwrap();
        let gone = pods.join("ns_b_u2/c/0.log");
        let elsewhere = root.join("other.log");
        std::fs::write(&elsewhere, "").unwrap();
        make(&links, "b_ns_c-2.log", &gone).unwrap();
        make(&links, "x_ns_c-3.log", &elsewhere).unwrap();
        let wanted = BTreeMap::from([("a_ns_c-1.log".to_string(), live.clone())]);
        let swept = sweep(&links, &pods, &wanted, true).unwrap();
        assert_eq!(
            swept,
            Swept {
                made: 1,
                removed: 1
            }
        );
        assert_eq!(
            std::fs::read_to_string(links.join("a_ns_c-1.log")).unwrap(),
            "hello\n"
        );
        assert!(
            links.join("x_ns_c-3.log").exists(),
            "another agent's live link is left"
        );
        assert_eq!(
            sweep(&links, &pods, &wanted, true).unwrap(),
            Swept::default()
        );
        let swept = sweep(&links, &pods, &BTreeMap::new(), true).unwrap();
        assert_eq!(swept.removed, 1, "the container is gone: so is its link");
        std::fs::remove_file(&elsewhere).unwrap();
        assert_eq!(
            sweep(&links, &pods, &BTreeMap::new(), false).unwrap(),
            Swept::default(),
            "another agent's dangling link waits for a sweep that looks at them"
        );
        assert_eq!(
            sweep(&links, &pods, &BTreeMap::new(), true)
                .unwrap()
                .removed,
            1,
            "dangling"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_update_follows_the_wanted_links_without_reading_the_directory() {
        let root = tmp("update");
        let (links, pods) = (root.join("containers"), root.join("pods"));
        let (a, b) = (pods.join("ns_a_u1/c/0.log"), pods.join("ns_b_u2/c/0.log"));
        let foreign = root.join("gone.log");
        make(&links, "x_ns_c-9.log", &foreign).unwrap();
        let first = BTreeMap::from([("a_ns_c-1.log".to_string(), a.clone())]);
        let made = update(&links, &BTreeMap::new(), &first).unwrap();
        assert_eq!(
            made,
            Swept {
                made: 1,
                removed: 0
            }
        );
        // Made already (as a container's start makes it): nothing to count.
        make(&links, "b_ns_c-2.log", &b).unwrap();
        let second = BTreeMap::from([("b_ns_c-2.log".to_string(), b.clone())]);
        assert_eq!(
            update(&links, &first, &second).unwrap(),
            Swept {
                made: 0,
                removed: 1
            }
        );
        assert_eq!(std::fs::read_link(links.join("b_ns_c-2.log")).unwrap(), b);
        assert!(std::fs::symlink_metadata(links.join("a_ns_c-1.log")).is_err());
        assert!(
            std::fs::symlink_metadata(links.join("x_ns_c-9.log")).is_ok(),
            "a link it did not make is left to the sweeps"
        );
        std::fs::remove_file(links.join("b_ns_c-2.log")).unwrap();
        assert_eq!(
            update(&links, &second, &BTreeMap::new()).unwrap(),
            Swept::default(),
            "already gone"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
