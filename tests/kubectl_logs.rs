//! `kubectl logs` against a real agent and containerd, on a log many times the API's read
//! chunk: `-f` streams until the container stops and then ends by itself; `--previous`,
//! `--tail` and `--limit-bytes` give exactly the lines and bytes asked for.

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const LINES: usize = 60_000;

fn pod_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "seq 1 {LINES}; i=0; while [ $i -lt 10 ]; do echo tick $i; i=$((i+1)); sleep 0.3; done"]
"#
    )
}

fn expected_output() -> String {
    let mut s: String = (1..=LINES).map(|i| format!("{i}\n")).collect();
    s.extend((0..10).map(|i| format!("tick {i}\n")));
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_until_the_container_stops_and_tail_and_limit_are_exact() {
    let agent = Agent::start("kubectl-logs").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&pod_yaml());
    wait_for("chatty Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "chatty"], "{.status.phase}") == "Running"
    })
    .await;

    // Follows the first instance from its start until it exits (about 3 s).
    let mut follow = k
        .command(&["logs", "-f", "chatty"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    let reader = std::thread::spawn({
        let mut stdout = follow.stdout.take().unwrap();
        move || {
            stdout.read_to_string(&mut out).unwrap();
            out
        }
    });
    wait_for("kubectl logs -f to end", Duration::from_secs(30), || {
        follow.try_wait().unwrap().is_some()
    })
    .await;
    let followed = reader.join().unwrap();
    assert!(
        followed == expected_output(),
        "followed {} bytes, ending {:?}",
        followed.len(),
        &followed[followed.len().saturating_sub(40)..]
    );

    // Once it has been restarted, that instance is the previous one.
    wait_for("a restart", Duration::from_secs(60), || {
        k.jsonpath(
            &["pod", "chatty"],
            "{.status.containerStatuses[0].restartCount}",
        ) == "1"
    })
    .await;
    let whole = k.ok(&["logs", "--previous", "chatty"]);
    assert!(whole == expected_output(), "{} bytes", whole.len());
    assert_eq!(
        k.ok(&["logs", "--previous", "--tail=3", "chatty"]),
        "tick 7\ntick 8\ntick 9\n"
    );
    let tail = k.ok(&["logs", "--previous", "--tail=12", "chatty"]);
    assert_eq!(
        tail.lines().next(),
        Some(&*format!("{}", LINES - 1)),
        "{tail}"
    );
    assert_eq!(
        k.ok(&["logs", "--previous", "--limit-bytes=8", "chatty"]),
        "1\n2\n3\n4\n"
    );
    assert_eq!(k.ok(&["logs", "--previous", "--tail=0", "chatty"]), "");
    k.ok(&["delete", "pod", "chatty", "--wait=false"]);
}
