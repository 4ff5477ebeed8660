use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use podvisor_core::PodUid;

use super::super::pod_cgroups::PodCgroups;
use super::MIN_AGE;

fn mkdir(fs: &Path, dir: &str) {
    std::fs::create_dir_all(fs.join(dir)).unwrap();
}

fn age(fs: &Path, dir: &str, by: Duration) {
    let f = std::fs::File::open(fs.join(dir)).unwrap();
    f.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn a_pod_cgroup_nobody_knows_goes_from_every_hierarchy_once_old_enough() {
    let fs = std::env::temp_dir().join(format!("podvisor-cgroup-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fs);
    for h in ["cpu", "memory", "pids"] {
        // An orphan with an empty container cgroup the runtime left; a known pod; one
        // made a moment ago (another agent's, before its sandbox).
        mkdir(&fs, &format!("{h}/kubepods/besteffort/podold/c1"));
        mkdir(&fs, &format!("{h}/kubepods/podkept"));
        mkdir(&fs, &format!("{h}/kubepods/burstable/podnew"));
    }
    let old = MIN_AGE + Duration::from_secs(5);
    age(&fs, "memory/kubepods/besteffort/podold", old);
    age(&fs, "memory/kubepods/podkept", old);
    let cg = PodCgroups {
        fs: fs.clone(),
        root: "/".into(),
        systemd: false,
    };
    let keep: HashSet<PodUid> = [PodUid::from("kept")].into();
    let swept = cg.sweep_orphans(&keep, SystemTime::now());
    assert!(swept.stayed.is_empty(), "{:?}", swept.stayed);
    assert_eq!(swept.removed, [PodUid::from("old")]);
    for h in ["cpu", "memory", "pids"] {
        assert!(
            !fs.join(h).join("kubepods/besteffort/podold").exists(),
            "{h}"
        );
        assert!(fs.join(h).join("kubepods/besteffort").is_dir(), "{h}");
        assert!(fs.join(h).join("kubepods/podkept").is_dir(), "{h}");
        assert!(fs.join(h).join("kubepods/burstable/podnew").is_dir(), "{h}");
    }
    // Once old enough, the one nobody claimed goes too.
    let later = SystemTime::now() + MIN_AGE;
    assert_eq!(
        cg.sweep_orphans(&keep, later).removed,
        [PodUid::from("new")]
    );
    assert!(fs.join("memory/kubepods/podkept").is_dir());
    let systemd = PodCgroups {
        systemd: true,
        ..cg
    };
    assert!(
        systemd
            .sweep_orphans(&HashSet::new(), later)
            .removed
            .is_empty()
    );
    let _ = std::fs::remove_dir_all(&fs);
}

#[test]
fn a_pod_cgroup_holding_something_stays_and_says_where() {
    let fs = std::env::temp_dir().join(format!("podvisor-cgroup-busy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fs);
    // A plain file stands for what the kernel will not let go (a process).
    mkdir(&fs, "memory/kubepods/besteffort/podbusy");
    std::fs::write(fs.join("memory/kubepods/besteffort/podbusy/tasks"), "1").unwrap();
    age(&fs, "memory/kubepods/besteffort/podbusy", MIN_AGE * 2);
    let cg = PodCgroups {
        fs: fs.clone(),
        root: "/".into(),
        systemd: false,
    };
    let swept = cg.sweep_orphans(&HashSet::new(), SystemTime::now());
    assert!(swept.removed.is_empty());
    assert_eq!(swept.stayed.len(), 1);
    assert!(
        swept.stayed[0].to_string().contains("podbusy"),
        "{}",
        swept.stayed[0]
    );
    let _ = std::fs::remove_dir_all(&fs);
}

#[test]
fn an_orphan_s_cgroup_goes_whatever_its_class() {
    let fs = std::env::temp_dir().join(format!("podvisor-cgroup-uid-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fs);
    mkdir(&fs, "cpu/kubepods/burstable/podo/c1");
    mkdir(&fs, "memory/kubepods/burstable/podo");
    mkdir(&fs, "memory/kubepods/besteffort/podother");
    let cg = PodCgroups {
        fs: fs.clone(),
        root: "/".into(),
        systemd: false,
    };
    assert!(cg.remove_uid(&PodUid::from("o")).is_empty());
    assert!(!fs.join("cpu/kubepods/burstable/podo").exists());
    assert!(!fs.join("memory/kubepods/burstable/podo").exists());
    assert!(fs.join("memory/kubepods/besteffort/podother").is_dir());
    let _ = std::fs::remove_dir_all(&fs);
}
