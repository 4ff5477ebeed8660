//! Ephemeral containers through `kubectl debug` against a real agent and containerd: the
//! node's API takes them through `pods/ephemeralcontainers` only (never on create, never
//! removed or changed, never on a static pod's mirror), the pod worker starts each once,
//! its status and logs are served, and one with a target shares its processes.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn target() -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: target}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {{name: app, image: {IMAGE}, command: [sleep, "3600"]}}
"#
    )
}

fn ephemeral_state(k: &Kubectl, name: &str) -> String {
    k.jsonpath(
        &["pod", "target"],
        &format!("{{.status.ephemeralContainerStatuses[?(@.name==\"{name}\")].state}}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_debug_adds_a_debugger_that_runs_once_beside_its_target() {
    let agent = Agent::start("ephemeral").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&target());
    wait_for("target Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "target"], "{.status.phase}") == "Running"
    })
    .await;
    assert_eq!(
        k.jsonpath(&["pod", "target"], "{.metadata.generation}"),
        "1"
    );

    // A debugger sharing the app's processes: it sees the app's sleep.
    k.ok(&[
        "debug",
        "target",
        "--image",
        IMAGE,
        "-c",
        "dbg",
        "--target=app",
        "--",
        "sh",
        "-c",
        "ps; echo debugged",
    ]);
    wait_for("the debugger to finish", Duration::from_secs(60), || {
        ephemeral_state(&k, "dbg").contains("terminated")
    })
    .await;
    let logs = k.ok(&["logs", "target", "-c", "dbg"]);
    assert!(
        logs.contains("debugged") && logs.contains("sleep 3600"),
        "{logs}"
    );
    assert_eq!(
        k.jsonpath(&["pod", "target"], "{.metadata.generation}"),
        "2"
    );
    // Never started again, though it exited; the app kept running.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(ephemeral_state(&k, "dbg").contains("terminated"));
    let restarts = k.jsonpath(
        &["pod", "target"],
        "{.status.containerStatuses[0].restartCount}",
    );
    assert_eq!(restarts, "0");

    // Interactive, as `kubectl debug -i`: attached to its stdin.
    let r = k.run_with(
        &[
            "debug", "-i", "target", "--image", IMAGE, "-c", "shell", "--", "sh",
        ],
        "echo from-stdin\nexit\n",
    );
    assert!(
        r.stdout.contains("from-stdin"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );

    // Through the main resource an ephemeral container can be neither added nor removed,
    // and through the subresource none already there can go.
    let drop_all = r#"{"spec": {"ephemeralContainers": []}}"#;
    let r = k.run(&["patch", "pod", "target", "--type=merge", "-p", drop_all]);
    assert!(
        !r.ok && r.stderr.contains("may not change fields"),
        "{}",
        r.stderr
    );
    let r = k.run(&[
        "patch",
        "pod",
        "target",
        "--subresource=ephemeralcontainers",
        "--type=merge",
        "-p",
        drop_all,
    ]);
    assert!(
        !r.ok
            && r.stderr
                .contains("existing ephemeral containers \"dbg\" may not be removed"),
        "{}",
        r.stderr
    );
    // Nor can a pod be created with one.
    let with = format!(
        "{}  ephemeralContainers:\n  - {{name: dbg, image: {IMAGE}}}\n",
        target().replace("name: target", "name: born-debugged")
    );
    let r = k.run_with(&["apply", "-f", "-"], &with);
    assert!(
        !r.ok
            && r.stderr
                .contains("spec.ephemeralContainers: Forbidden: cannot be set on create"),
        "{}",
        r.stderr
    );
}
