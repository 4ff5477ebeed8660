use super::*;

/// Every manifest in `dir`, with no memory of earlier scans.
fn scan(dir: &Path, node: &str) -> Scan {
    scan_keeping(dir, node, &LastGood::new())
}

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("podvisor-manifests-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const WEB: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: localhost/podvisor/busybox:test
    command: [sleep, '3600']
";

#[test]
fn a_pod_gets_its_static_identity() {
    let d = Dir::new("identity");
    let path = d.write("web.yaml", WEB);
    let first = scan(&d.0, "Node-A");
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    let p = &first.pods[0];
    assert_eq!(p.metadata.name.as_deref(), Some("web-node-a"));
    assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
    let ann = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann[CONFIG_SOURCE_ANNOTATION], "file");
    assert_eq!(ann[MANIFEST_ANNOTATION], path.display().to_string());
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    let t = &spec.tolerations.as_ref().unwrap()[0];
    assert_eq!(
        (t.operator.as_deref(), t.effect.as_deref()),
        (Some("Exists"), Some("NoExecute"))
    );
    let uid = p.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 36);
    // Same content, same node, same file: same UID. Any of the three changed: another.
    assert_eq!(
        scan(&d.0, "Node-A").pods[0].metadata.uid.as_deref(),
        Some(uid.as_str())
    );
    assert_ne!(
        scan(&d.0, "node-b").pods[0].metadata.uid.as_deref(),
        Some(uid.as_str())
    );
    d.write("web.yaml", &WEB.replace("3600", "3601"));
    assert_ne!(
        scan(&d.0, "Node-A").pods[0].metadata.uid.as_deref(),
        Some(uid.as_str())
    );
}

#[test]
fn multi_document_yaml_and_json_are_read() {
    let d = Dir::new("multi");
    d.write(
        "two.yaml",
        &format!("{WEB}---\n{}---\n", WEB.replace("name: web", "name: api")),
    );
    d.write(
        "db.json",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"db","image":"busybox"}]}}"#,
    );
    d.write("notes.txt", "not a manifest");
    d.write(".hidden.yaml", "garbage: [");
    let s = scan(&d.0, "n");
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let mut names: Vec<&str> = s
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["api-n", "db-n", "web-n"]);
}

#[test]
fn a_bad_file_is_reported_with_its_reason_and_the_good_ones_still_load() {
    let d = Dir::new("bad");
    d.write("good.yaml", WEB);
    let cases = [
        (
            "syntax.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: [",
            "invalid YAML",
        ),
        (
            "kind.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
            "expected apiVersion v1 and kind Pod",
        ),
        (
            "noimage.yaml",
            &WEB.replace("    image: localhost/podvisor/busybox:test\n", ""),
            "spec.containers[0].image: Required value",
        ),
        (
            "dup.yaml",
            &format!("{WEB}  - name: app\n    image: busybox\n"),
            "spec.containers[1].name: Duplicate value: \"app\"",
        ),
        (
            "name.yaml",
            &WEB.replace("name: web", "name: Web_Server"),
            "metadata.name: Invalid value: \"Web_Server\": a lowercase RFC 1123 subdomain",
        ),
        (
            "long.yaml",
            &WEB.replace("name: web", &format!("name: {}", "a".repeat(260))),
            "must be no more than 253 characters",
        ),
        (
            "port.yaml",
            &format!("{WEB}    ports:\n    - containerPort: 70000\n"),
            "containerPort: Invalid value: 70000: must be between 1 and 65535",
        ),
        (
            "cpu.yaml",
            &format!("{WEB}    resources:\n      requests:\n        cpu: lots\n"),
            "resources.requests[cpu]: Invalid value: \"lots\"",
        ),
        (
            "vol.yaml",
            &format!("{WEB}    volumeMounts:\n    - name: data\n      mountPath: /data\n"),
            "volumeMounts[0].name: Not found: \"data\"",
        ),
        ("empty.yaml", "", "no pod in file"),
        (
            "subpath.yaml",
            &format!(
                "{WEB}    volumeMounts:\n    - {{name: d, mountPath: /d, subPath: ../../etc}}\n  volumes:\n  - {{name: d, emptyDir: {{}}}}\n"
            ),
            "must not contain '..'",
        ),
        (
            "abs-subpath.yaml",
            &format!(
                "{WEB}    volumeMounts:\n    - {{name: d, mountPath: /d, subPath: /etc}}\n  volumes:\n  - {{name: d, emptyDir: {{}}}}\n"
            ),
            "subPath: Invalid value: \"/etc\": must be a relative path",
        ),
        (
            "hostpath.yaml",
            &format!("{WEB}  volumes:\n  - {{name: d, hostPath: {{path: data}}}}\n"),
            "spec.volumes[0].hostPath.path: Invalid value: \"data\": must be an absolute path",
        ),
        (
            "hostname.yaml",
            &WEB.replace(
                "spec:\n",
                &format!("spec:\n  hostname: {}\n", "é".repeat(32)),
            ),
            "spec.hostname: Invalid value",
        ),
        (
            "grace.yaml",
            &WEB.replace(
                "spec:\n",
                "spec:\n  terminationGracePeriodSeconds: 9223372036854775807\n",
            ),
            "spec.terminationGracePeriodSeconds: Invalid value: 9223372036854775807",
        ),
        (
            "token.yaml",
            &format!(
                "{WEB}  volumes:\n  - name: t\n    projected: {{sources: [{{serviceAccountToken: {{path: token}}}}]}}\n"
            ),
            "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: a static pod may not use service-account tokens",
        ),
        (
            "huge.yaml",
            &format!("{WEB}    resources:\n      requests:\n        memory: 9Ei\n"),
            "resources.requests[memory]: Invalid value: \"9Ei\"",
        ),
    ];
    for (file, text, _) in &cases {
        d.write(file, text);
    }
    let s = scan(&d.0, "n");
    assert_eq!(s.pods.len(), 1, "the good pod still loads");
    for (file, _, reason) in cases {
        let (_, why) = s
            .errors
            .iter()
            .find(|(p, _)| p.ends_with(file))
            .unwrap_or_else(|| panic!("{file} not reported"));
        assert!(why.contains(reason), "{file}: {why}");
    }
    // A file is taken whole or not at all.
    d.write(
        "half.yaml",
        &format!(
            "{}---\n{}",
            WEB.replace("name: web", "name: ok"),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: []}\n"
        ),
    );
    let s = scan(&d.0, "n");
    assert!(
        !s.pods
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some("ok-n"))
    );
    let why = &s
        .errors
        .iter()
        .find(|(p, _)| p.ends_with("half.yaml"))
        .unwrap()
        .1;
    assert!(
        why.starts_with("document 2: spec.containers: Required value"),
        "{why}"
    );
}

#[test]
fn oversized_files_are_refused_unread() {
    let d = Dir::new("big");
    let path = d.write("big.yaml", "");
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(MAX_FILE_SIZE + 1).unwrap();
    let s = scan(&d.0, "n");
    assert!(
        s.errors[0].1.contains("larger than the 10 MiB limit"),
        "{:?}",
        s.errors
    );
}

#[test]
fn two_files_defining_one_pod_keep_the_first() {
    let d = Dir::new("dup-pod");
    d.write("a.yaml", WEB);
    d.write("b.yaml", WEB);
    let s = scan(&d.0, "n");
    assert_eq!(s.pods.len(), 1);
    assert!(s.errors[0].0.ends_with("b.yaml") && s.errors[0].1.contains("already defined"));
}

#[test]
fn a_manifest_that_breaks_keeps_its_last_good_pods_until_it_is_fixed_or_removed() {
    let d = Dir::new("last-good");
    let path = d.write("web.yaml", WEB);
    d.write("other.yaml", &WEB.replace("name: web", "name: other"));
    let first = scan_keeping(&d.0, "n", &LastGood::new());
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    let web_uid = |s: &Scan| {
        s.pods
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some("web-n"))
            .and_then(|p| p.metadata.uid.clone())
    };
    let uid = web_uid(&first).expect("web loads");

    // A typo: the file is reported, and the pod it described keeps running unchanged.
    d.write(
        "web.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: 7\n",
    );
    let broken = scan_keeping(&d.0, "n", &first.good);
    assert_eq!(broken.pods.len(), 2, "{:?}", broken.errors);
    assert_eq!(web_uid(&broken).as_deref(), Some(uid.as_str()));
    let (p, why) = &broken.errors[0];
    assert_eq!(p, &path);
    assert!(why.contains("last valid version keeps running"), "{why}");

    // Without a previous version (a fresh agent), the broken file runs nothing.
    assert_eq!(scan_keeping(&d.0, "n", &LastGood::new()).pods.len(), 1);

    // A restarted source recovers the same memory from the sync loop's desired pods.
    let recovered = last_good_from(&first.pods);
    assert_eq!(
        recovered.keys().collect::<Vec<_>>(),
        first.good.keys().collect::<Vec<_>>()
    );
    let after_restart = scan_keeping(&d.0, "n", &recovered);
    assert_eq!(web_uid(&after_restart).as_deref(), Some(uid.as_str()));

    // Still broken on the next scan: still kept (the memory is carried forward).
    let again = scan_keeping(&d.0, "n", &broken.good);
    assert_eq!(web_uid(&again).as_deref(), Some(uid.as_str()));

    // Removing the file removes its pods.
    std::fs::remove_file(&path).unwrap();
    let gone = scan_keeping(&d.0, "n", &again.good);
    assert!(web_uid(&gone).is_none());
    assert!(gone.errors.is_empty());
    assert!(!gone.good.contains_key(&path));
}

#[test]
fn an_unreadable_directory_is_not_an_empty_one() {
    let missing = std::env::temp_dir().join(format!("podvisor-no-such-dir-{}", std::process::id()));
    let s = scan(&missing, "n");
    assert!(s.unreadable);
    assert!(s.pods.is_empty());
    assert!(s.errors[0].1.contains("cannot read the manifest directory"));
    let d = Dir::new("readable");
    assert!(!scan(&d.0, "n").unreadable);
}

#[test]
fn a_manifest_whose_aliases_expand_without_bound_is_refused_with_the_reason() {
    // 65 KB: one anchor of 1,000 scalars referenced 20,000 times (20 million nodes: this
    // took the agent to 2.7 GB).
    let mut bomb = String::from("apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\nx: &a [");
    bomb.push_str(&vec!["x"; 1000].join(","));
    bomb.push_str("]\ny: [");
    bomb.push_str(&vec!["*a"; 20_000].join(","));
    bomb.push_str("]\n");
    let d = Dir::new("alias-bomb");
    let path = d.write("bomb.yaml", &bomb);
    d.write("web.yaml", WEB);
    let t0 = std::time::Instant::now();
    let s = scan(&d.0, "n1");
    assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(s.pods.len(), 1, "the good file still loads");
    let (bad, why) = &s.errors[0];
    assert_eq!(bad, &path);
    assert!(
        why.contains("aliases repeat more than a manifest needs"),
        "{why}"
    );
}

#[test]
fn a_file_that_did_not_change_gives_the_same_pods_without_being_read() {
    use std::time::{Duration, SystemTime};
    let later = || SystemTime::now() + super::super::stamp::SETTLED_AFTER + Duration::from_secs(1);
    let d = Dir::new("stamps");
    let path = d.write("web.yaml", WEB);
    // Just written: read, and not stamped (a second write in the same clock tick, of the
    // same length, could share its stamp).
    let fresh = scan_keeping(&d.0, "n", &LastGood::new());
    assert!(fresh.good[&path].stamp.is_none());
    let first = scan_at(&d.0, "n", &fresh.good, later());
    assert!(first.good[&path].stamp.is_some(), "settled: stamped");
    let again = scan_at(&d.0, "n", &first.good, later());
    assert!(
        std::sync::Arc::ptr_eq(first.pods[0].arc(), again.pods[0].arc()),
        "the same shared pod, not a new parse"
    );
    // Edited in place to the same length: read.
    std::fs::write(&path, WEB.replace("name: web", "name: wob")).unwrap();
    let edited = scan_at(&d.0, "n", &again.good, later());
    assert_eq!(edited.pods[0].metadata.name.as_deref(), Some("wob-n"));
    // Replaced by another file (a new inode) with the same times: read.
    let tmp = d.write(".tmp", &WEB.replace("name: web", "name: new"));
    let f = std::fs::File::options().write(true).open(&tmp).unwrap();
    f.set_modified(std::fs::metadata(&path).unwrap().modified().unwrap())
        .unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let replaced = scan_at(&d.0, "n", &edited.good, later());
    assert_eq!(replaced.pods[0].metadata.name.as_deref(), Some("new-n"));
}

#[test]
fn a_file_read_again_unchanged_gives_the_copies_it_gave_before() {
    let d = Dir::new("unsettled");
    let path = d.write("web.yaml", WEB);
    // Written just now: every scan reads it again (its stamp is not trusted yet); what it
    // gives is the same shared pod while its content is the same, so the sync loop and
    // the pod's worker keep one copy, not one per scan of a burst.
    let first = scan_keeping(&d.0, "n", &LastGood::new());
    let again = scan_keeping(&d.0, "n", &first.good);
    assert!(again.good[&path].stamp.is_none(), "read again, unstamped");
    assert!(
        std::sync::Arc::ptr_eq(first.pods[0].arc(), again.pods[0].arc()),
        "the same shared pod"
    );
    std::fs::write(&path, WEB.replace("3600", "3601")).unwrap();
    let edited = scan_keeping(&d.0, "n", &again.good);
    assert!(!std::sync::Arc::ptr_eq(
        first.pods[0].arc(),
        edited.pods[0].arc()
    ));
    assert_ne!(
        first.pods[0].uid(),
        edited.pods[0].uid(),
        "a new incarnation"
    );
}

#[test]
fn a_burst_of_files_read_again_gives_one_copy_of_each_pod() {
    let d = Dir::new("burst");
    let mut last = LastGood::new();
    let mut seen: Vec<std::sync::Arc<Pod>> = Vec::new();
    for round in 0..4 {
        // Files keep arriving while the first scans run, renamed in as a writer would.
        for i in (round * 50)..(round * 50 + 50) {
            let tmp = d.0.join(format!(".p{i}.tmp"));
            std::fs::write(&tmp, WEB.replace("name: web", &format!("name: p{i}"))).unwrap();
            std::fs::rename(&tmp, d.0.join(format!("p{i}.yaml"))).unwrap();
        }
        let s = scan_keeping(&d.0, "n", &last);
        for p in &s.pods {
            if !seen.iter().any(|a| std::sync::Arc::ptr_eq(a, p.arc())) {
                seen.push(p.arc().clone());
            }
        }
        last = s.good;
    }
    assert_eq!(seen.len(), 200, "one shared copy of each pod across scans");
}
