//! A runtime restart must not need a podvisor restart: the client reconnects by itself.
//! Lives in its own test binary because it stops the shared test containerd.

mod common;

use std::time::Duration;

use common::containerd;
use podvisor_cri::{CriRuntime, Runtime};

/// Stops the test containerd, optionally calls it while it is down, and starts it again.
async fn restart_containerd(rt: &CriRuntime, call_while_down: bool) {
    containerd::stop().await;
    if call_while_down {
        // While it is down, calls fail fast as "unreachable"; they do not hang.
        let started = std::time::Instant::now();
        let err = rt.version().await.unwrap_err();
        assert!(err.is_unreachable(), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    containerd::start();
}

#[tokio::test]
async fn next_call_after_containerd_restart_succeeds() {
    let rt = common::runtime().await;
    // Never a silent pass: this test restarts the scripts' containerd, so it needs one
    // (scripts/test starts it; PODVISOR_CONTAINERD_DIR says where it is).
    containerd::pid();
    let before = rt.version().await.unwrap();

    // Case 1: the client noticed the outage (a call failed while containerd was down).
    restart_containerd(&rt, true).await;
    let after = rt.version().await.expect("first call after the restart");
    assert_eq!(after, before);

    // Case 2: the client was idle during the outage and holds a dead connection.
    restart_containerd(&rt, false).await;
    rt.list_pods()
        .await
        .expect("first call after an unnoticed restart");
    assert_eq!(rt.version().await.unwrap(), before);
}
