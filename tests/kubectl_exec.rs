//! `kubectl exec`, `cp`, `attach` and `port-forward` against a real agent and containerd:
//! the node's API proxies each session to containerd's stream server (SPDY from kubectl,
//! WebSocket from the Python client), with exit codes, stdin and its end, and refusals
//! that come at once with a reason.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const SHELL: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["sleep", "3600"]
  - name: side
    image: localhost/podvisor/busybox:test
    command: ["sleep", "3600"]
"#;

async fn running(k: &Kubectl, name: &str) {
    wait_for(&format!("{name} Running"), Duration::from_secs(60), || {
        k.jsonpath(&["pod", name], "{.status.phase}") == "Running"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_gives_output_exit_codes_and_stdin_and_cp_copies_both_ways() {
    let agent = Agent::start("kubectl-exec").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(SHELL);
    running(&k, "shell").await;

    let r = k.run(&[
        "exec",
        "shell",
        "-c",
        "main",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; exit 3",
    ]);
    assert_eq!(r.stdout, "out\n");
    assert!(r.stderr.contains("err"), "{}", r.stderr);
    let code = k
        .command(&["exec", "shell", "-c", "main", "--", "sh", "-c", "exit 3"])
        .status()
        .unwrap()
        .code();
    assert_eq!(code, Some(3), "kubectl exits with the command's code");

    // stdin reaches the command, and its end ends the command.
    let r = k.run_with(
        &[
            "exec", "-i", "shell", "-c", "side", "--", "tr", "a-z", "A-Z",
        ],
        "hello\nworld\n",
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.stdout, "HELLO\nWORLD\n");
    assert_eq!(
        k.ok(&["exec", "shell", "-c", "side", "--", "hostname"]),
        "shell\n"
    );

    // A terminal: kubectl exec -it, given one by `script` (a pty of its own).
    let kubeconfig = agent.state_dir().join("kubeconfig");
    let line = format!(
        "{} --kubeconfig {} exec -it shell -c main -- sh -c 'tty; stty size'",
        common::kubectl::binary(),
        kubeconfig.display()
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = common::succeeded(out);
    assert!(
        text.contains("/dev/pts/"),
        "the command has a terminal: {text:?}"
    );

    // cp: tar through exec, a megabyte each way.
    let dir = agent.out_dir();
    let data: Vec<u8> = (0..1_048_576u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(dir.join("blob"), &data).unwrap();
    let local = dir.join("blob").display().to_string();
    k.ok(&["cp", "-c", "main", &local, "shell:/tmp/blob"]);
    let sum = k.ok(&[
        "exec",
        "shell",
        "-c",
        "main",
        "--",
        "sh",
        "-c",
        "wc -c < /tmp/blob",
    ]);
    assert_eq!(sum.trim(), "1048576");
    let back = dir.join("back").display().to_string();
    k.ok(&["cp", "-c", "main", "shell:/tmp/blob", &back]);
    assert!(
        std::fs::read(dir.join("back")).unwrap() == data,
        "the copy came back changed"
    );
    k.ok(&["delete", "pod", "shell", "--wait=false"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_come_at_once_with_their_reason() {
    let agent = Agent::start_configured(
        "kubectl-exec-refused",
        "",
        "[streaming]\nmax_sessions = 1\n",
    )
    .await;
    let k = Kubectl::for_agent(&agent);
    k.apply(SHELL);
    running(&k, "shell").await;
    let quick = |args: &[&str], want: &str| {
        let started = Instant::now();
        let r = k.run(args);
        assert!(!r.ok, "{args:?} succeeded");
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} took {:?}",
            started.elapsed()
        );
    };
    quick(&["exec", "nope", "--", "ls"], "not found");
    quick(
        &["exec", "shell", "-c", "other", "--", "ls"],
        "container other is not valid for pod shell",
    );

    // One session at most: a second one is refused while the first lasts.
    let mut first = k
        .command(&["exec", "shell", "-c", "main", "--", "sleep", "8"])
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    quick(
        &["exec", "shell", "-c", "main", "--", "true"],
        "too many streaming sessions",
    );
    assert!(first.wait().unwrap().success());
    k.ok(&["exec", "shell", "-c", "main", "--", "true"]);

    // A client without the node's token gets nothing.
    let text = std::fs::read_to_string(agent.state_dir().join("kubeconfig")).unwrap();
    let forged = agent.out_dir().join("forged-kubeconfig");
    std::fs::write(&forged, text.replace(&agent.token(), "not-the-token")).unwrap();
    let stranger = Kubectl::with(forged);
    let r = stranger.run(&["exec", "shell", "-c", "main", "--", "true"]);
    assert!(!r.ok);
    assert!(
        r.stderr.to_lowercase().contains("unauthorized"),
        "{}",
        r.stderr
    );
    k.ok(&["delete", "pod", "shell", "--wait=false"]);
}

const WEB: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: httpd
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "mkdir -p /www && echo hello from the pod > /www/index.html && exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_forward_reaches_the_pods_port_again_and_again() {
    let agent = Agent::start("kubectl-port-forward").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(WEB);
    wait_for("web Ready", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "web"], "{.status.containerStatuses[0].ready}") == "true"
    })
    .await;
    let (mut pf, port) = k.port_forward(&["pod/web", ":8080"]);
    for _ in 0..3 {
        let page = common::kubectl::http_get(port);
        assert!(
            page.contains("hello from the pod"),
            "{page}\n{}",
            agent.log_tail(30)
        );
    }
    pf.kill().unwrap();
    let _ = pf.wait();
    k.ok(&["delete", "pod", "web", "--wait=false"]);
}

const READER: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: reader
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    stdin: true
    stdinOnce: true
    command: ["sh", "-c", "while read l; do echo got $l; done; echo bye"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_feeds_a_containers_stdin_and_follows_its_output() {
    let agent = Agent::start("kubectl-attach").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(READER);
    running(&k, "reader").await;
    let r = k.run_with(&["attach", "-i", "reader"], "one\ntwo\n");
    assert!(
        r.stdout.contains("got one\ngot two\n"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    // stdinOnce: the end of this client's stdin is the container's.
    wait_for("reader Succeeded", Duration::from_secs(30), || {
        k.jsonpath(&["pod", "reader"], "{.status.phase}") == "Succeeded"
    })
    .await;
    let r = k.run(&["exec", "reader", "--", "true"]);
    assert!(r.stderr.contains("completed pod"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_execs_too() {
    let agent = Agent::start("python-exec").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(SHELL);
    running(&k, "shell").await;
    let out = common::python()
        .arg("tests/python/exec.py")
        .arg(agent.state_dir().join("kubeconfig"))
        .output()
        .unwrap();
    let stdout = common::succeeded(out);
    assert_eq!(stdout, "out:HELLO\nerr:oops\ncode:7\ntty:/dev/pts/0\n");
    k.ok(&["delete", "pod", "shell", "--wait=false"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_pod_is_reached_through_its_mirror() {
    let agent = Agent::start("exec-static").await;
    let k = Kubectl::for_agent(&agent);
    agent.write(
        "static.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: still\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [\"sleep\", \"3600\"]\n",
    );
    let mirror = agent.name("still");
    running(&k, &mirror).await;
    assert_eq!(k.ok(&["exec", &mirror, "--", "echo", "inside"]), "inside\n");
}
