//! An unmodified kubectl manages pods on a real agent against containerd: apply → Running
//! in kubectl's own columns, watch, logs, a strategic-merge re-apply, graceful delete with
//! SIGTERM first, and refusals with the status codes kubectl understands.

mod common;

use std::time::{Duration, Instant};

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

fn pod_yaml(name: &str, out: &std::path::Path, tier: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web, tier: {tier}}}
spec:
  terminationGracePeriodSeconds: 20
  volumes:
  - name: out
    hostPath: {{path: {out}}}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["/bin/sh", "-c", "trap 'echo got TERM > /out/{name}.term; sleep 1; exit 0' TERM; echo hello from {name}; while true; do sleep 0.1; done"]
"#,
        out = out.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_watches_logs_and_deletes_a_pod() {
    let agent = Agent::start("kubectl-pods").await;
    // The pod writes into a hostPath, which the baseline Pod Security level refuses.
    let k = Kubectl::for_agent(&agent).privileged();
    // A watch from before the pod exists sees its whole life.
    let mut watch = k
        .command(&["get", "pods", "-w", "--output-watch-events"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        k.apply(&pod_yaml("web", &agent.out_dir(), "front"))
            .contains("pod/web created")
    );
    wait_for("web Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "web"], "{.status.phase}") == "Running"
    })
    .await;

    let table = k.ok(&["get", "pods"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{table}"
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "1/1", "Running", "0"], "{table}");
    let wide = k.ok(&["get", "pods", "-o", "wide"]);
    assert!(
        wide.lines().next().unwrap().contains("IP") && wide.contains(&agent.node),
        "{wide}"
    );
    let ip = k.jsonpath(&["pod", "web"], "{.status.podIP}");
    assert!(wide.contains(&ip) && !ip.is_empty(), "{wide}");
    let yaml = k.ok(&["get", "pod", "web", "-o", "yaml"]);
    assert!(
        yaml.contains("phase: Running") && yaml.contains("containerStatuses"),
        "{yaml}"
    );
    assert!(k.ok(&["logs", "web"]).contains("hello from web"));

    // A second apply with a change goes as a strategic merge patch.
    let out = k.apply(&pod_yaml("web", &agent.out_dir(), "back"));
    assert!(out.contains("pod/web configured"), "{out}");
    assert_eq!(
        k.jsonpath(&["pod", "web"], "{.metadata.labels.tier}"),
        "back"
    );
    assert_eq!(
        k.jsonpath(&["pod", "web"], "{.metadata.generation}"),
        "1",
        "labels are not spec"
    );
    assert_eq!(
        k.ok(&["get", "pods", "-l", "tier=back", "-o", "name"])
            .trim(),
        "pod/web"
    );

    // Graceful delete: kubectl returns once the pod is gone, after its SIGTERM handler ran.
    let t0 = Instant::now();
    let out = k.ok(&["delete", "pod", "web"]);
    assert!(out.contains("pod \"web\" deleted"), "{out}");
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "the TERM handler sleeps 1 s"
    );
    let term = std::fs::read_to_string(agent.out_dir().join("web.term")).unwrap_or_default();
    assert_eq!(term.trim(), "got TERM", "SIGTERM first");
    assert!(k.ok(&["get", "pods", "-o", "name"]).trim().is_empty());

    let _ = watch.kill();
    let seen = String::from_utf8_lossy(&watch.wait_with_output().unwrap().stdout).into_owned();
    for expected in ["ADDED", "Running", "Terminating", "DELETED"] {
        assert!(
            seen.contains(expected),
            "the watch saw no {expected}:\n{seen}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_clear_refusals() {
    let agent = Agent::start("kubectl-refusals").await;
    let k = Kubectl::for_agent(&agent);
    let bad_name = "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec:\n  containers: [{name: c, image: x}]\n";
    let r = k.run_with(&["apply", "-f", "-"], bad_name);
    assert!(
        !r.ok && r.stderr.contains("is invalid") && r.stderr.contains("metadata.name"),
        "{}",
        r.stderr
    );
    let unknown = "apiVersion: v1\nkind: Pod\nmetadata: {name: typo}\nspec:\n  containers: [{name: c, image: x, imagePullPolcy: Always}]\n";
    let r = k.run_with(&["apply", "-f", "-"], unknown);
    assert!(
        !r.ok
            && r.stderr
                .contains("unknown field \"spec.containers[0].imagePullPolcy\""),
        "{}",
        r.stderr
    );
    let no_containers =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {containers: []}\n";
    let r = k.run_with(&["create", "-f", "-"], no_containers);
    assert!(
        !r.ok && r.stderr.contains("spec.containers: Required value"),
        "{}",
        r.stderr
    );

    // Pod Security: baseline unless the namespace says otherwise, every violation named.
    let host = "apiVersion: v1\nkind: Pod\nmetadata: {name: host}\nspec:\n  hostPID: true\n  volumes: [{name: root, hostPath: {path: /}}]\n  containers: [{name: c, image: x, volumeMounts: [{name: root, mountPath: /host}]}]\n";
    let r = k.run_with(&["create", "-f", "-"], host);
    assert!(
        !r.ok
            && r.stderr.contains("forbidden")
            && r.stderr
                .contains("violates PodSecurity \"baseline:latest\"")
            && r.stderr.contains("host namespaces (hostPID=true)")
            && r.stderr.contains("hostPath volumes (volume \"root\")"),
        "{}",
        r.stderr
    );

    // kubectl's generators send protobuf: read for the kinds they make here.
    k.ok(&["create", "namespace", "team"]);
    k.ok(&[
        "label",
        "namespace",
        "team",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    let plain = "apiVersion: v1\nkind: Pod\nmetadata: {name: plain, namespace: team}\nspec:\n  containers: [{name: c, image: x}]\n";
    let r = k.run_with(&["create", "-f", "-"], plain);
    assert!(
        !r.ok
            && r.stderr
                .contains("violates PodSecurity \"restricted:latest\"")
            && r.stderr.contains("allowPrivilegeEscalation != false"),
        "{}",
        r.stderr
    );
    k.ok(&[
        "create",
        "secret",
        "generic",
        "pw",
        "-n",
        "team",
        "--from-literal=pw=hunter2",
    ]);
    assert_eq!(
        k.jsonpath(&["secret", "pw", "-n", "team"], "{.data.pw}"),
        "aHVudGVyMg=="
    );
    k.ok(&["create", "configmap", "cfg", "--from-literal=a=1"]);
    let stale = k.ok(&["get", "configmap", "cfg", "-o", "json"]);
    k.ok(&["patch", "configmap", "cfg", "-p", r#"{"data":{"a":"2"}}"#]);
    let r = k.run_with(&["replace", "-f", "-"], &stale);
    assert!(
        !r.ok && r.stderr.contains("the object has been modified"),
        "stale update: {}",
        r.stderr
    );

    let r = k.run(&["--token=not-the-token", "get", "pods"]);
    assert!(!r.ok && r.stderr.contains("Unauthorized"), "{}", r.stderr);
    // The debug endpoint's manifest errors (paths and reasons) need the token too.
    for route in ["/debug/manifest-errors"] {
        let anonymous = podvisor_debug::client::get(&agent.endpoint, route, None).await;
        assert!(
            anonymous.is_err(),
            "{route} answered without a token: {anonymous:?}"
        );
        assert!(
            podvisor_debug::client::get(&agent.endpoint, route, Some(&agent.token()))
                .await
                .is_ok()
        );
    }
    let r = k.run(&["get", "pod", "nothing"]);
    assert!(
        !r.ok && r.stderr.contains("pods \"nothing\" not found"),
        "{}",
        r.stderr
    );
    let r = k.run(&["delete", "namespace", "kube-system"]);
    assert!(!r.ok && r.stderr.contains("Forbidden"), "{}", r.stderr);
    // A server-side dry run is answered and changes nothing, for the store and the node.
    let k = k.privileged();
    k.apply(&pod_yaml("dry", &agent.out_dir(), "front"));
    wait_for("dry Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "dry"], "{.status.phase}") == "Running"
    })
    .await;
    let r = k.run(&["delete", "pod", "dry", "--dry-run=server"]);
    assert!(r.ok, "{}", r.stderr);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        k.jsonpath(&["pod", "dry"], "{.metadata.deletionTimestamp}")
            .is_empty()
    );
    assert!(
        !agent.out_dir().join("dry.term").exists(),
        "the pod got no SIGTERM from a dry run"
    );
}

/// The Python `kubernetes` client: `$PODVISOR_PYTHON` (scripts/test sets the venv that
/// scripts/test-deps makes), else `python3`. A missing module fails with what to do.
fn python() -> String {
    let py = std::env::var("PODVISOR_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import kubernetes"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{py} has no `kubernetes` module: run scripts/test-deps (or set PODVISOR_PYTHON)"
    );
    py
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_lists_patches_creates_and_watches() {
    let agent = Agent::start("python-client").await;
    let k = Kubectl::for_agent(&agent).privileged();
    k.apply(&pod_yaml("py", &agent.out_dir(), "front"));
    let out = std::process::Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/list_watch.py"
        ))
        .arg(&k.kubeconfig)
        .arg("py")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("listed py"), "{stdout}");
    assert!(
        stdout.contains("pod MODIFIED py python"),
        "the watch saw the patch:\n{stdout}"
    );
    assert!(stdout.contains("configmap ADDED from-python"), "{stdout}");
    assert!(stdout.contains("configmaps from-python"), "{stdout}");
    assert_eq!(
        k.jsonpath(&["pod", "py"], "{.metadata.labels.seen-by}"),
        "python"
    );
    k.ok(&["delete", "pod", "py", "--grace-period=1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_pods_show_as_mirrors_that_a_delete_does_not_stop_and_the_node_is_ready() {
    let agent = Agent::start("kubectl-mirror").await;
    let k = Kubectl::for_agent(&agent);
    wait_for("the node Ready", Duration::from_secs(30), || {
        k.jsonpath(
            &["node", &agent.node],
            "{.status.conditions[?(@.type==\"Ready\")].status}",
        ) == "True"
    })
    .await;
    assert!(k.ok(&["get", "nodes"]).contains(" Ready "));
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: stat}\nspec:\n  containers:\n  - {name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, 'while true; do sleep 1; done']}\n";
    agent.write("stat.yaml", yaml);
    let name = agent.name("stat");
    wait_for("the mirror Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", &name], "{.status.phase}") == "Running"
    })
    .await;
    let mirror_of = k.jsonpath(
        &["pod", &name],
        "{.metadata.annotations.kubernetes\\.io/config\\.mirror}",
    );
    let runtime = agent.runtime_pods().await;
    assert_eq!(runtime.len(), 1);
    let static_uid = runtime[0].pod.uid.to_string();
    assert_eq!(mirror_of, static_uid, "the mirror names the static pod");
    let first_mirror = k.jsonpath(&["pod", &name], "{.metadata.uid}");
    let r = k.run(&["delete", "pod", &name]);
    assert!(
        r.ok && r.stderr.contains("keeps running"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    wait_for("a new mirror", Duration::from_secs(30), || {
        let uid = k.jsonpath(&["pod", &name], "{.metadata.uid}");
        !uid.is_empty() && uid != first_mirror
    })
    .await;
    let pods = agent.runtime_pods().await;
    assert_eq!(pods.len(), 1, "the static pod kept its one sandbox");
    assert_eq!(agent.static_uid("stat").await.unwrap(), static_uid);
}

/// podvisor's own `get pods`, `describe pod` and `logs`: thin clients of the same API, for
/// a machine without kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podvisor_get_describe_and_logs_read_the_api() {
    let agent = Agent::start("cli-pods").await;
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: said}\nspec:\n  containers:\n  - {name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, 'echo said hello; sleep 3600']}\n";
    agent.write("said.yaml", yaml);
    agent.write(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: []}\n",
    );
    let name = agent.name("said");
    agent
        .wait_pod("said", "running", Duration::from_secs(60), |p| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .await;
    let kubeconfig = agent.dir.join("state").join("kubeconfig");
    let podvisor = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_podvisor"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("PODVISOR_ENDPOINT", &agent.endpoint)
            .env("PODVISOR_TOKEN", agent.token())
            .output()
            .unwrap();
        assert!(out.status.success(), "podvisor {args:?}: {out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (table, warnings) = podvisor(&["get", "pods", "-o", "wide"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        &header[..6],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"],
        "{table}"
    );
    assert!(
        table.contains(&name) && table.contains("Running"),
        "{table}"
    );
    assert!(
        warnings.contains("bad.yaml"),
        "unusable manifests are named: {warnings}"
    );
    let (json, _) = podvisor(&["get", "pods", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(list["kind"], "PodList");
    let (text, _) = podvisor(&["describe", "pod", &name]);
    assert!(
        text.contains("Containers:") && text.contains("Running"),
        "{text}"
    );
    assert!(text.contains("Started"), "the kubelet's events: {text}");
    let (log, _) = podvisor(&["logs", &name]);
    assert_eq!(log, "said hello\n");
}

/// `kubectl delete --force --grace-period=0`: the object goes at once and the agent stops
/// the pod at once, not after the pod's own (long) grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_delete_stops_the_pod_at_once() {
    let agent = Agent::start("kubectl-force").await;
    let k = Kubectl::for_agent(&agent);
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: stubborn}\nspec:\n  terminationGracePeriodSeconds: 120\n  containers:\n  - {name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, 'trap \"\" TERM; while true; do sleep 0.2; done']}\n";
    k.apply(yaml);
    wait_for("stubborn Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "stubborn"], "{.status.phase}") == "Running"
    })
    .await;
    let t0 = Instant::now();
    let r = k.run(&["delete", "pod", "stubborn", "--grace-period=0", "--force"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(k.ok(&["get", "pods", "-o", "name"]).trim().is_empty());
    loop {
        let running = agent
            .runtime_pods()
            .await
            .iter()
            .flat_map(|p| p.containers.clone())
            .any(|c| c.state == podvisor_cri::ContainerState::Running);
        if !running {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the container ignores SIGTERM and has 120 s of grace: only a forced stop ends it this soon\n{}",
            agent.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `kubectl run --restart=Never`: the pod runs once and shows Completed, and stays so after
/// the agent cleaned its containers up (before, it went back to Pending/ContainerCreating).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_ran_once_stays_completed() {
    let agent = Agent::start("kubectl-once").await;
    let k = Kubectl::for_agent(&agent);
    k.ok(&[
        "run",
        "once",
        "--image=localhost/podvisor/busybox:test",
        "--restart=Never",
        "--",
        "echo",
        "done",
    ]);
    wait_for("once Succeeded", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "once"], "{.status.phase}") == "Succeeded"
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(k.jsonpath(&["pod", "once"], "{.status.phase}"), "Succeeded");
    let table = k.ok(&["get", "pod", "once"]);
    assert!(table.contains("Completed"), "{table}");
}
