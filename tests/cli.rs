//! The `podvisor` binary's runtime commands, run as a user would.

mod common;

use std::process::Command;

fn podvisor(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_podvisor"))
        .args(args)
        .env_remove("PODVISOR_RUNTIME_ENDPOINT")
        .output()
        .expect("run podvisor")
}

#[tokio::test]
async fn version_prints_podvisor_and_runtime_versions() {
    // Fails with instructions when containerd is not up.
    let runtime = podvisor_cri::Runtime::version(&common::runtime().await)
        .await
        .unwrap();
    let endpoint = common::endpoint();
    let out = podvisor(&["version", "--runtime-endpoint", &endpoint]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(concat!("podvisor:    ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    let line = format!("runtime:     containerd {}\n", runtime.runtime_version);
    assert!(stdout.contains(&line), "{stdout}");
    assert!(stdout.contains("runtime API: v1"), "{stdout}");
}

#[tokio::test]
async fn runtime_status_lists_ready_conditions() {
    common::runtime().await;
    let out = podvisor(&[
        "runtime",
        "status",
        "--runtime-endpoint",
        &common::endpoint(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("RuntimeReady") && l.contains("True"))
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("NetworkReady") && l.contains("True"))
    );
}

#[test]
fn missing_runtime_gives_one_clear_line_and_a_failure_code() {
    for cmd in [&["version"][..], &["runtime", "status"][..]] {
        let mut args = cmd.to_vec();
        args.extend(["--runtime-endpoint", "unix:///nonexistent/containerd.sock"]);
        let out = podvisor(&args);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(
                "podvisor: cannot reach the container runtime at unix:///nonexistent/containerd.sock: "
            ),
            "{stderr}"
        );
    }
}

#[test]
fn non_unix_endpoint_is_rejected_with_the_reason() {
    let out = podvisor(&["version", "--runtime-endpoint", "tcp://127.0.0.1:1"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a unix socket"), "{stderr}");
}
