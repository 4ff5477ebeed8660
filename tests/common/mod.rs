//! Shared set-up for the integration tests: finding the test containerd and naming things
//! so parallel tests and repeated runs never collide.

#![allow(dead_code)]

pub mod agent;
pub mod cluster;
pub mod containerd;
pub mod kubectl;
pub mod nodes;
pub mod pod_watch;
pub mod registry;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use podvisor_cri::{CriRuntime, Runtime, Timeouts};

/// Where `scripts/containerd-up` puts its socket unless told otherwise.
pub const DEFAULT_TEST_ENDPOINT: &str = "unix:///var/lib/podvisor-containerd/containerd.sock";

pub fn endpoint() -> String {
    std::env::var("PODVISOR_TEST_ENDPOINT").unwrap_or_else(|_| DEFAULT_TEST_ENDPOINT.to_string())
}

/// Connects to the test containerd, failing at once, with the fix in the message, when it
/// is not running: a missing runtime must not look like a hung test.
pub async fn runtime() -> CriRuntime {
    let endpoint = endpoint();
    let rt = CriRuntime::new(
        &endpoint,
        Timeouts {
            call: Duration::from_secs(60),
            ..Default::default()
        },
    )
    .expect("valid endpoint");
    // containerd 2.x answers on its socket before its CRI service has initialized (just
    // after `scripts/containerd-up` started it): wait that out, a few seconds at most.
    for _ in 0..40 {
        match rt.version().await {
            Err(e) if e.to_string().contains("not initialized") => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            _ => break,
        }
    }
    if let Err(e) = rt.version().await {
        panic!(
            "the integration tests need a running containerd: {e}\n\
             start one with `scripts/containerd-up` (or point PODVISOR_TEST_ENDPOINT at yours)"
        );
    }
    let image = podvisor_cri::sample::TEST_IMAGE;
    if let Ok(None) = rt.image_status(image).await {
        panic!(
            "{image} is not in the test containerd: `scripts/containerd-up` imports it (and \
             pins it, so no agent's image garbage collection removes it)"
        );
    }
    rt
}

/// A pod UID unique to this process and call.
pub fn unique_uid(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}-{}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh directory for pod logs.
pub fn log_dir(uid: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join("podvisor-tests").join(uid);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Stops and removes every sandbox and container of pod `uid`.
pub async fn remove_pod(rt: &CriRuntime, uid: &str) {
    let pods = rt.list_pods().await.unwrap_or_default();
    for pod in pods.into_iter().filter(|p| p.pod.uid == uid) {
        for c in &pod.containers {
            let _ = rt.stop_container(&c.id, Duration::ZERO).await;
            let _ = rt.remove_container(&c.id).await;
        }
        for s in &pod.sandboxes {
            let _ = rt.stop_sandbox(&s.id).await;
            let _ = rt.remove_sandbox(&s.id).await;
        }
    }
}

/// Polls `check` every 20 ms until it returns `Some`, or panics after `limit`.
/// Waits until `check` holds, polling every 100 ms; fails the test naming `what` after `limit`.
pub async fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !check() {
        assert!(
            t0.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the test containerd streams CRI container events: 1.6 answers
/// `GetContainerEvents` with Unimplemented, 1.7 and later stream. CI runs the suite against
/// both (`PODVISOR_CONTAINERD_VERSION`), so a test that asserts one behaviour or the other
/// by this answer has both of its branches exercised.
pub async fn runtime_streams_events() -> bool {
    let v = runtime().await.version().await.unwrap();
    !v.runtime_version.starts_with("1.6.")
}

/// The test containerd's version (`1.7.24`, `2.1.9+unknown`), for tests that pin what a
/// runtime version does.
pub async fn runtime_version() -> String {
    use podvisor_cri::Runtime;
    runtime().await.version().await.unwrap().runtime_version
}

/// The standard output of a command that must have succeeded (else both outputs, in the
/// panic).
pub fn succeeded(out: std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The Python with the `kubernetes` and `websocket` modules (scripts/test-deps' venv).
/// A Prometheus text exposition through Prometheus' own Python parser (which refuses a
/// malformed one): its families by name, as `tests/python/parse_metrics.py` prints them.
pub fn parse_exposition(text: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
    use std::io::Write as _;
    use std::process::Stdio;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/parse_metrics.py");
    let mut child = python()
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Prometheus' parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A sample's value as `parse_metrics.py` gives it: a number, or the text of one JSON
/// cannot hold (`inf`, `-inf`, `nan`).
pub fn metric_value(v: &serde_json::Value) -> f64 {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
        .unwrap_or_else(|| panic!("not a sample value: {v}"))
}

pub fn python() -> std::process::Command {
    let path =
        std::env::var("PODVISOR_PYTHON").expect("PODVISOR_PYTHON (scripts/test-deps sets it)");
    std::process::Command::new(path)
}
