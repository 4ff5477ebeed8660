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

    // Interactive, as `kubectl debug -i`: attached to its stdin, which stays open until
    // the answer came (containerd detaches an attach whose stdin closes, as it does for
    // the kubelet, so piping the input and closing at once would race the output).
    let said = interactive(
        &k,
        &[
            "debug", "-i", "target", "--image", IMAGE, "-c", "shell", "--", "sh",
        ],
        "echo from-$((6 * 7))\n",
        "from-42",
    );
    assert!(said.contains("from-42"), "{said}");

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

/// Runs kubectl `args` with `input` on its stdin, kept open until its output contains
/// `expect` (or 60 s passed); then says `exit` and closes it. What kubectl printed.
fn interactive(k: &Kubectl, args: &[&str], input: &str, expect: &str) -> String {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut child = k
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(60) && !contains(&seen, expect) {
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.extend(chunk);
        }
    }
    let _ = stdin.write_all(b"exit\n");
    drop(stdin);
    let _ = child.wait();
    seen.extend(rx.try_iter().flatten());
    String::from_utf8_lossy(&seen).into_owned()
}

fn contains(seen: &[u8], text: &str) -> bool {
    String::from_utf8_lossy(seen).contains(text)
}
