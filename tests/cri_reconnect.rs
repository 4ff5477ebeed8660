//! A runtime restart must not need a podvisor restart: the client reconnects by itself.
//! Lives in its own test binary because it stops the shared test containerd.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use podvisor_cri::{CriRuntime, Runtime};

fn containerd_dir() -> PathBuf {
    std::env::var_os("PODVISOR_CONTAINERD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/podvisor-containerd"))
}

/// Stops the test containerd, optionally calls it while it is down, and starts it again.
async fn restart_containerd(rt: &CriRuntime, pid: &str, call_while_down: bool) {
    assert!(Command::new("kill").arg(pid).status().unwrap().success());
    common::eventually("containerd to exit", Duration::from_secs(10), || async {
        let alive = Command::new("kill")
            .args(["-0", pid])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        (!alive).then_some(())
    })
    .await;
    if call_while_down {
        // While it is down, calls fail fast as "unreachable"; they do not hang.
        let started = std::time::Instant::now();
        let err = rt.version().await.unwrap_err();
        assert!(err.is_unreachable(), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/containerd-up");
    let up = Command::new(script).output().unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
}

fn current_pid() -> Option<String> {
    let raw = std::fs::read_to_string(containerd_dir().join("containerd.pid")).ok()?;
    Some(raw.trim().to_string())
}

#[tokio::test]
async fn next_call_after_containerd_restart_succeeds() {
    let rt = common::runtime().await;
    // Never a silent pass: this test restarts the scripts' containerd, so it needs one
    // (scripts/test starts it; PODVISOR_CONTAINERD_DIR says where it is).
    let pid = current_pid().unwrap_or_else(|| {
        panic!(
            "no containerd.pid under {}: run the tests with scripts/test, which starts containerd with scripts/containerd-up",
            containerd_dir().display()
        )
    });
    let before = rt.version().await.unwrap();

    // Case 1: the client noticed the outage (a call failed while containerd was down).
    restart_containerd(&rt, &pid, true).await;
    let after = rt.version().await.expect("first call after the restart");
    assert_eq!(after, before);

    // Case 2: the client was idle during the outage and holds a dead connection.
    let pid = current_pid().expect("containerd-up wrote a new pid");
    restart_containerd(&rt, &pid, false).await;
    rt.list_pods()
        .await
        .expect("first call after an unnoticed restart");
    assert_eq!(rt.version().await.unwrap(), before);
}
