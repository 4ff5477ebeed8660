//! Probes against containerd, through a real agent: readiness (httpGet through kubectl,
//! tcpSocket, grpc against a server in the pod) flips Ready and back; a failing liveness
//! probe restarts the container with the probe's grace period; a startup probe holds a
//! slow starter's liveness probe back.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn app(p: &Pod) -> ContainerStatus {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first().cloned())
        .unwrap_or_default()
}

fn condition(p: &Pod, kind: &str) -> String {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == kind))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readiness_probe_that_starts_failing_makes_the_pod_unready_and_back() {
    let agent = Agent::start("probe-ready").await;
    // The pod serves a hostPath the test writes into, which baseline Pod Security refuses.
    let k = Kubectl::for_agent(&agent).privileged();
    let www = agent.out_dir();
    std::fs::write(www.join("ready"), "ok").unwrap();
    k.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{{name: www, hostPath: {{path: {www}}}}}]
  containers:
  - name: web
    image: {IMAGE}
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    ports: [{{name: http, containerPort: 8080}}]
    volumeMounts: [{{name: www, mountPath: /www}}]
    readinessProbe: {{httpGet: {{path: /ready, port: http}}, periodSeconds: 1, failureThreshold: 1}}
    livenessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
"#,
        www = www.display()
    ));
    k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    let row = k.ok(&["get", "pod", "web", "--no-headers"]);
    assert!(row.contains("1/1"), "{row}");
    let ready_to_start = k.jsonpath(
        &["pod", "web"],
        "{.status.conditions[?(@.type==\"PodReadyToStartContainers\")].status}",
    );
    assert_eq!(ready_to_start, "True");

    std::fs::remove_file(www.join("ready")).unwrap();
    k.ok(&[
        "wait",
        "--for=condition=Ready=false",
        "pod/web",
        "--timeout=30s",
    ]);
    let row = k.ok(&["get", "pod", "web", "--no-headers"]);
    assert!(
        row.contains("0/1") && row.contains("Running"),
        "{row}\n{}\nagent log tail:\n{}",
        k.ok(&["get", "pod", "web", "-o", "yaml"]),
        agent.log_tail(60)
    );
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(
        events.contains("Readiness probe failed: HTTP probe failed with statuscode: 404"),
        "{events}"
    );
    let describe = k.ok(&["describe", "pod", "web"]);
    assert!(
        describe.contains("Unhealthy") && describe.contains("Readiness:"),
        "{describe}"
    );

    std::fs::write(www.join("ready"), "ok").unwrap();
    k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=30s"]);
    // The tcpSocket liveness probe passed throughout: never restarted.
    assert_eq!(
        k.jsonpath(
            &["pod", "web"],
            "{.status.containerStatuses[0].restartCount}"
        ),
        "0"
    );
    let prober = agent.actor_state("prober").await;
    assert!(prober["runs"].as_u64().unwrap_or(0) >= 3, "{prober}");
    assert!(prober["failures"].as_u64().unwrap_or(0) >= 1, "{prober}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_liveness_probe_restarts_the_container_with_the_probes_grace() {
    let agent = Agent::start("probe-live").await;
    // The container ignores SIGTERM: it stops only at the grace deadline, which is the
    // probe's 1 s, not the pod's 60.
    agent.write(
        "live.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: live}}
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: {IMAGE}
    command: ["sh", "-c", "trap '' TERM; touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600"]
    livenessProbe:
      exec: {{command: ["cat", "/tmp/healthy"]}}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
"#
        ),
    );
    let p = agent
        .wait_pod(
            "live",
            "restarted by its liveness probe",
            Duration::from_secs(30),
            |p| app(p).restart_count >= 1,
        )
        .await;
    let last = app(&p)
        .last_state
        .and_then(|l| l.terminated)
        .expect("the killed instance");
    assert_eq!(last.exit_code, 137, "SIGKILL at the probe's grace deadline");
    let ran = last
        .finished_at
        .unwrap()
        .0
        .duration_since(last.started_at.unwrap().0);
    assert!(
        ran.as_secs_f64() < 15.0,
        "killed after {ran:?}, not after 60 s"
    );
    let k = Kubectl::for_agent(&agent);
    let events = k.ok(&[
        "get",
        "events",
        "-o",
        "custom-columns=REASON:.reason,MESSAGE:.message",
    ]);
    assert!(events.contains("Liveness probe failed"), "{events}");
    assert!(
        events.contains("Container app failed liveness probe, will be restarted"),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_startup_probe_keeps_the_liveness_probe_off_a_slow_starter() {
    let agent = Agent::start("probe-startup").await;
    agent.write(
        "slow.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: slow}}
spec:
  containers:
  - name: app
    image: {IMAGE}
    command: ["sh", "-c", "sleep 4; touch /tmp/started; sleep 3600"]
    startupProbe: {{exec: {{command: ["cat", "/tmp/started"]}}, periodSeconds: 1, failureThreshold: 30}}
    livenessProbe: {{exec: {{command: ["cat", "/tmp/started"]}}, periodSeconds: 1, failureThreshold: 1}}
    readinessProbe: {{exec: {{command: ["cat", "/tmp/started"]}}, periodSeconds: 1}}
"#
        ),
    );
    let p = agent
        .wait_pod("slow", "running", Duration::from_secs(30), |p| {
            app(p).state.and_then(|s| s.running).is_some()
        })
        .await;
    let c = app(&p);
    assert_eq!(
        (c.started, c.ready),
        (Some(false), false),
        "not started before its probe says so"
    );
    let p = agent
        .wait_pod("slow", "ready", Duration::from_secs(30), |p| {
            condition(p, "Ready") == "True"
        })
        .await;
    let c = app(&p);
    assert_eq!((c.started, c.ready, c.restart_count), (Some(true), true, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_and_grpc_probes_reach_servers_in_the_pod() {
    let agent = Agent::start("probe-grpc").await;
    let server = std::path::Path::new(env!("CARGO_BIN_EXE_podvisor-test-grpc"));
    let out = agent.out_dir();
    std::fs::write(out.join("healthy"), "").unwrap();
    // The test server is a host binary: it runs in the busybox image with the host's C
    // library mounted where its loader looks.
    agent.write(
        "grpc.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: grpc}}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {{name: bin, hostPath: {{path: {bin}}}}}
  - {{name: lib, hostPath: {{path: /lib/x86_64-linux-gnu}}}}
  - {{name: lib64, hostPath: {{path: /lib64}}}}
  - {{name: out, hostPath: {{path: {out}}}}}
  containers:
  - name: server
    image: {IMAGE}
    command: ["/server/{name}", "9090", "/out/healthy"]
    volumeMounts:
    - {{name: bin, mountPath: /server, readOnly: true}}
    - {{name: lib, mountPath: /lib/x86_64-linux-gnu, readOnly: true}}
    - {{name: lib64, mountPath: /lib64, readOnly: true}}
    - {{name: out, mountPath: /out}}
    readinessProbe: {{grpc: {{port: 9090}}, periodSeconds: 1, failureThreshold: 1}}
  - name: tcp
    image: {IMAGE}
    command: ["nc", "-ll", "-p", "7000", "-e", "true"]
    readinessProbe: {{tcpSocket: {{port: 7000}}, periodSeconds: 1}}
"#,
            bin = server.parent().unwrap().display(),
            name = server.file_name().unwrap().to_string_lossy(),
            out = out.display()
        ),
    );
    agent
        .wait_pod("grpc", "both ready", Duration::from_secs(60), |p| {
            condition(p, "Ready") == "True"
        })
        .await;
    std::fs::remove_file(out.join("healthy")).unwrap();
    let p = agent
        .wait_pod(
            "grpc",
            "the grpc probe failing",
            Duration::from_secs(30),
            |p| condition(p, "Ready") == "False",
        )
        .await;
    let statuses = p.status.unwrap().container_statuses.unwrap();
    let ready: Vec<(&str, bool)> = statuses
        .iter()
        .map(|c| (c.name.as_str(), c.ready))
        .collect();
    assert_eq!(ready, [("server", false), ("tcp", true)]);
    std::fs::write(out.join("healthy"), "").unwrap();
    agent
        .wait_pod("grpc", "ready again", Duration::from_secs(30), |p| {
            condition(p, "Ready") == "True"
        })
        .await;
}
