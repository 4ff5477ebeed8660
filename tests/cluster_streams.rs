//! `kubectl logs`, `exec`, `cp` and `port-forward` through a real cluster to a pod on a
//! podvisor node: the API server reaches the node's kubelet server (its port from the
//! Node's `daemonEndpoints`, its own client certificate from the cluster's CA), which
//! proxies each session to containerd. A client the cluster knows but did not allow gets
//! 403 from the kubelet server itself.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::nodes::*;
use common::wait_for;

fn pod(ns: &str, node: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: talker, namespace: {ns}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    imagePullPolicy: Never
    command: [sh, -c, \"echo first; echo last; exec sleep 86400\"]
  - name: web
    image: localhost/podvisor/busybox:test
    imagePullPolicy: Never
    command: [sh, -c, \"mkdir -p /www && echo served by the node > /www/index.html && exec httpd -f -p 8080 -h /www\"]
    readinessProbe:
      tcpSocket: {{port: 8080}}
      periodSeconds: 1
"
    )
}

fn in_ns<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    [&["-n", ns][..], args].concat()
}

/// The kubelet server's port, as the Node's `daemonEndpoints` gives it.
fn kubelet_port(admin: &common::kubectl::Kubectl, node: &str) -> String {
    let port = admin.jsonpath(
        &["node", node],
        "{.status.daemonEndpoints.kubeletEndpoint.Port}",
    );
    assert!(
        port.parse::<u16>().is_ok_and(|p| p > 0),
        "daemonEndpoints: {port:?}"
    );
    port
}

/// Applies the talker pod to `node` and waits until it is Ready.
async fn talker_ready(admin: &common::kubectl::Kubectl, ns: &str, node: &str) {
    admin.apply(&pod(ns, node));
    let ready = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
    wait_for("talker Ready", 2 * MINUTE, || {
        admin.jsonpath(&["pod", "talker", "-n", ns], ready) == "True"
    })
    .await;
}

/// The status code the kubelet server answers `path` with, for `token`.
fn kubelet_code(port: &str, token: &str, path: &str) -> String {
    let script = format!(
        "import ssl, urllib.request, urllib.error\nctx = ssl._create_unverified_context()\nreq = urllib.request.Request('https://127.0.0.1:{port}{path}', headers={{'Authorization': 'Bearer {token}'}})\ntry:\n    print(urllib.request.urlopen(req, context=ctx, timeout=30).status)\nexcept urllib.error.HTTPError as e:\n    print(e.code)\n"
    );
    let out = common::python().args(["-c", &script]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_exec_cp_and_port_forward_reach_the_pod_through_the_cluster() {
    let agent = join("cs-streams", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    let port = kubelet_port(&admin, &node);
    talker_ready(&admin, &ns, &node).await;

    assert_eq!(
        admin.ok(&in_ns(&ns, &["logs", "talker", "-c", "main"])),
        "first\nlast\n"
    );
    assert_eq!(
        admin.ok(&in_ns(&ns, &["logs", "talker", "-c", "main", "--tail=1"])),
        "last\n"
    );
    // Followed: the lines so far come at once and the stream stays open.
    let mut follow = admin
        .command(&in_ns(&ns, &["logs", "-f", "talker", "-c", "main"]))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut followed = BufReader::new(follow.stdout.take().unwrap());
    let mut two = String::new();
    followed.read_line(&mut two).unwrap();
    followed.read_line(&mut two).unwrap();
    assert_eq!(two, "first\nlast\n");
    assert!(
        follow.try_wait().unwrap().is_none(),
        "a followed log stays open"
    );
    follow.kill().unwrap();
    let _ = follow.wait();

    let r = admin.run(&in_ns(
        &ns,
        &[
            "exec",
            "talker",
            "-c",
            "main",
            "--",
            "sh",
            "-c",
            "echo out; exit 3",
        ],
    ));
    assert_eq!(r.stdout, "out\n", "{}", r.stderr);
    assert!(r.stderr.contains("exit code 3"), "{}", r.stderr);
    let r = admin.run_with(
        &in_ns(
            &ns,
            &[
                "exec", "-i", "talker", "-c", "main", "--", "tr", "a-z", "A-Z",
            ],
        ),
        "through the cluster\n",
    );
    assert_eq!(r.stdout, "THROUGH THE CLUSTER\n", "{}", r.stderr);

    let dir = agent.out_dir();
    std::fs::write(dir.join("note"), "copied in and out\n").unwrap();
    let note = dir.join("note").display().to_string();
    admin.ok(&in_ns(
        &ns,
        &["cp", "-c", "main", &note, "talker:/tmp/note"],
    ));
    let back = dir.join("back").display().to_string();
    admin.ok(&in_ns(
        &ns,
        &["cp", "-c", "main", "talker:/tmp/note", &back],
    ));
    assert_eq!(
        std::fs::read_to_string(dir.join("back")).unwrap(),
        "copied in and out\n"
    );

    let (mut pf, local) = admin.port_forward(&in_ns(&ns, &["pod/talker", ":8080"]));
    let page = common::kubectl::http_get(local);
    pf.kill().unwrap();
    let _ = pf.wait();
    assert!(page.contains("served by the node"), "{page}");

    // The cluster knows this service account; nothing lets it use the node.
    admin.ok(&in_ns(&ns, &["create", "serviceaccount", "nobody"]));
    let token = admin.ok(&in_ns(&ns, &["create", "token", "nobody"]));
    assert_eq!(kubelet_code(&port, token.trim(), "/pods"), "403");
    assert_eq!(kubelet_code(&port, "garbage", "/pods"), "401");
}

/// Whether the kubelet server at `port` shows a certificate the cluster's CA signed, for
/// 127.0.0.1 (one of its addresses): `ok`, or why not.
fn verified_by_cluster_ca(port: &str) -> String {
    let ca = common::cluster::admin_kubeconfig()
        .parent()
        .unwrap()
        .join("ca.crt");
    let script = format!(
        "import socket, ssl\nctx = ssl.create_default_context(cafile='{}')\ntry:\n    with socket.create_connection(('127.0.0.1', {port}), timeout=10) as s:\n        with ctx.wrap_socket(s, server_hostname='127.0.0.1') as t:\n            print('ok', dict(x[0] for x in t.getpeercert()['subject'])['commonName'])\nexcept ssl.SSLError as e:\n    print('no', e)\n",
        ca.display()
    );
    let out = common::python().args(["-c", &script]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The kubelet's `serverTLSBootstrap`: the node asks the cluster for its serving
/// certificate (signer `kubernetes.io/kubelet-serving`), serves a self-signed one until
/// someone approves, then the issued one, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_server_serves_the_certificate_the_cluster_issues_once_approved() {
    let agent = join("cs-serving", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    let port = kubelet_port(&admin, &node);
    let user = format!("system:node:{node}");
    let find = r#"{range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.metadata.name} {.spec.username}{"\n"}{end}"#;
    let mut csr = String::new();
    wait_for("the node's serving CSR", MINUTE, || {
        let listed = admin.ok(&["get", "csr", "-o", &format!("jsonpath={find}")]);
        let mine = listed.lines().find(|l| l.ends_with(&format!(" {user}")));
        csr = mine
            .and_then(|l| l.split(' ').next())
            .unwrap_or_default()
            .to_string();
        !csr.is_empty()
    })
    .await;
    let before = verified_by_cluster_ca(&port);
    assert!(
        before.starts_with("no"),
        "self-signed until approved: {before}"
    );
    admin.ok(&["certificate", "approve", &csr]);
    wait_for("the issued certificate served", MINUTE, || {
        verified_by_cluster_ca(&port) == format!("ok {user}")
    })
    .await;
    // The API server still reaches the node through it.
    talker_ready(&admin, &ns, &node).await;
    assert_eq!(
        admin.ok(&in_ns(&ns, &["logs", "talker", "-c", "main", "--tail=1"])),
        "last\n"
    );
}

/// What the node conformance suite found missing, through the cluster: `kubectl debug` adds
/// a debugger to the talker that shares its processes and is attached at once, and a
/// pod's readiness gates hold it unready until the condition they name is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debuggers_and_readiness_gates_work_through_the_cluster() {
    let agent = join("cs-debug", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    talker_ready(&admin, &ns, &node).await;
    // Attached to its output (stdin is not: containerd detaches an attach whose stdin
    // closes, the kubelet's too, so piped input would race the output); one that ended
    // before kubectl attached is read from its log, which goes through :10250 as well.
    let debug = [
        "debug",
        "--attach",
        "talker",
        "--image=localhost/podvisor/busybox:test",
        "--image-pull-policy=Never",
        "--target=main",
        "-c",
        "dbg",
        "--",
        "sh",
        "-c",
        "sleep 1; ps",
    ];
    let r = admin.run(&in_ns(&ns, &debug));
    assert!(
        r.stdout.contains("sleep 86400"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let state = admin.jsonpath(
        &["pod", "talker", "-n", &ns],
        "{.status.ephemeralContainerStatuses[0].name}",
    );
    assert_eq!(state, "dbg");

    let gated = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: gated, namespace: {ns}}}\nspec:\n  nodeSelector: {{kubernetes.io/hostname: {node}}}\n  readinessGates: [{{conditionType: example.com/lb}}]\n  containers:\n  - {{name: c, image: localhost/podvisor/busybox:test, imagePullPolicy: Never, command: [sleep, '3600']}}\n"
    );
    admin.apply(&gated);
    let ready = r#"{.status.conditions[?(@.type=="Ready")].reason}"#;
    wait_for("gated held back by its gate", 2 * MINUTE, || {
        admin.jsonpath(&["pod", "gated", "-n", &ns], ready) == "ReadinessGatesNotReady"
    })
    .await;
    let set = r#"{"status": {"conditions": [{"type": "example.com/lb", "status": "True"}]}}"#;
    admin.ok(&in_ns(
        &ns,
        &["patch", "pod", "gated", "--subresource=status", "-p", set],
    ));
    let status = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
    wait_for("gated Ready", MINUTE, || {
        admin.jsonpath(&["pod", "gated", "-n", &ns], status) == "True"
    })
    .await;
}
