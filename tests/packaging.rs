//! The Debian package (scripts/build-deb) installed with dpkg into a fresh Debian 12 root
//! (scripts/debian-root: debootstrap's minbase, no container runtime): every file where it
//! belongs, the binary runs there, the unit passes `systemd-analyze verify`, and removing
//! the package keeps the edited configuration (a conffile).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).trim().to_string()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn chroot(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("chroot");
    c.arg(root)
        .args(args)
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    c
}

#[test]
fn the_package_installs_on_a_fresh_debian_root_and_its_unit_verifies() {
    let deb = stdout(
        Command::new(repo().join("scripts/build-deb"))
            .args(["--binary", env!("CARGO_BIN_EXE_podvisor")])
            .current_dir(repo()),
    );
    let tar = stdout(&mut Command::new(repo().join("scripts/debian-root")));
    let root = std::env::temp_dir().join(format!("podvisor-deb-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    run(Command::new("tar")
        .args(["-C"])
        .arg(&root)
        .args(["-xf", &tar]));
    std::fs::copy(repo().join(&deb), root.join("podvisor.deb")).unwrap();

    run(&mut chroot(&root, &["dpkg", "-i", "/podvisor.deb"]));
    for (path, mode) in [
        ("usr/bin/podvisor", 0o755),
        ("usr/lib/systemd/system/podvisor.service", 0o644),
        ("etc/podvisor/podvisor.toml", 0o644),
        ("usr/share/bash-completion/completions/podvisor", 0o644),
        ("usr/share/doc/podvisor/help.txt", 0o644),
    ] {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(meta.permissions().mode() & 0o777, mode, "{path}");
    }
    let version = stdout(&mut chroot(&root, &["/usr/bin/podvisor", "--version"]));
    assert!(version.starts_with("podvisor "), "{version}");
    let help = std::fs::read_to_string(root.join("usr/share/doc/podvisor/help.txt")).unwrap();
    assert!(
        help.contains("--bootstrap-kubeconfig"),
        "the run --help text is shipped"
    );
    let verify = chroot(
        &root,
        &[
            "systemd-analyze",
            "verify",
            "/usr/lib/systemd/system/podvisor.service",
        ],
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success(), "systemd-analyze verify: {said}");
    assert!(
        !said.contains("podvisor.service:"),
        "the unit drew remarks: {said}"
    );

    std::fs::write(
        root.join("etc/podvisor/podvisor.toml"),
        "node_name = \"edited\"\n",
    )
    .unwrap();
    run(&mut chroot(&root, &["dpkg", "-r", "podvisor"]));
    assert!(!root.join("usr/bin/podvisor").exists(), "removed");
    let kept = std::fs::read_to_string(root.join("etc/podvisor/podvisor.toml")).unwrap();
    assert_eq!(
        kept, "node_name = \"edited\"\n",
        "an edited conffile outlives removal"
    );
    let _ = std::fs::remove_dir_all(&root);
}
