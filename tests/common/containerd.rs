//! The scripts' test containerd, for the tests that stop and start it. Each such test
//! lives in a test binary of its own: test binaries run one after another, so no other
//! test sees the outage.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where `scripts/containerd-up` keeps it (`PODVISOR_CONTAINERD_DIR`, which `scripts/test`
/// sets; else the scripts' default for `PODVISOR_CONTAINERD_VERSION`).
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PODVISOR_CONTAINERD_DIR") {
        return PathBuf::from(d);
    }
    match std::env::var("PODVISOR_CONTAINERD_VERSION").as_deref() {
        Ok(v @ ("1.7" | "2.1")) => PathBuf::from(format!("/var/lib/podvisor-containerd-{v}")),
        _ => PathBuf::from("/var/lib/podvisor-containerd"),
    }
}

/// How the addresses of bridge pods begin: each version has a subnet of its own
/// (`scripts/lib/containerd-env.sh`: 10.88.0.0/16 for 1.6, 10.89.0.0/16 for 1.7,
/// 10.90.0.0/16 for 2.1), so they can run side by side.
pub fn pod_subnet_prefix() -> &'static str {
    match std::env::var("PODVISOR_CONTAINERD_VERSION").as_deref() {
        Ok("1.7") => "10.89.",
        Ok("2.1") => "10.90.",
        _ => "10.88.",
    }
}

/// The running containerd's pid. Never a silent pass: a test that restarts the runtime
/// needs the one the scripts started.
pub fn pid() -> String {
    let path = dir().join("containerd.pid");
    match std::fs::read_to_string(&path) {
        Ok(raw) => raw.trim().to_string(),
        Err(e) => panic!(
            "{}: {e}: run the tests with scripts/test, which starts containerd with scripts/containerd-up",
            path.display()
        ),
    }
}

pub fn alive(pid: &str) -> bool {
    Command::new("kill")
        .args(["-0", pid])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Stops containerd (SIGTERM) and waits until it has exited; its shims, and so the pods'
/// processes, keep running.
pub async fn stop() {
    let pid = pid();
    assert!(Command::new("kill").arg(&pid).status().unwrap().success());
    super::eventually("containerd to exit", Duration::from_secs(10), || async {
        (!alive(&pid)).then_some(())
    })
    .await;
}

/// Starts it again with the scripts (the same directory, version and configuration).
pub fn start() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/containerd-up");
    let up = Command::new(script).output().unwrap();
    assert!(
        up.status.success(),
        "containerd-up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
}
