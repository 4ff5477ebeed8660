//! The kubelet server of a standalone node, as a client of the kubelet sees it: its port
//! in the Node's `daemonEndpoints`, every path behind the node's token (401 without it),
//! the pods, logs, `/run`, stats and metrics, and an exec over WebSocket with the
//! kubelet's query names, proxied to containerd.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "echo first; echo last; exec sleep 3600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
"#;

/// Each answer: (code, body), by name; `only` passed on to the script.
fn ask_some(
    agent: &Agent,
    port: &str,
    only: &[&str],
    pod: &str,
) -> HashMap<String, (String, String)> {
    let token = agent.token();
    let args = ["tests/python/kubelet_server.py", port, &token, pod, "main"];
    let out = common::python()
        .args(args.iter().chain(only))
        .output()
        .unwrap();
    let text = common::succeeded(out);
    text.lines()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let name = parts.next().unwrap_or_default().to_string();
            let code = parts.next().unwrap_or_default().to_string();
            let body = parts.next().unwrap_or_default();
            let body = serde_json::from_str::<String>(body).unwrap_or_else(|_| body.to_string());
            (name, (code, body))
        })
        .collect()
}

fn ask(agent: &Agent, port: &str) -> HashMap<String, (String, String)> {
    ask_some(agent, port, &[], "talker")
}

/// `/metrics/probes` as the kubelet serves it.
fn probe_metrics(agent: &Agent, port: &str) -> String {
    ask_some(agent, port, &["probes"], "talker")["probes"]
        .1
        .clone()
}

const TALKER_READY: &str =
    r#"prober_probe_total{container="main",namespace="default",pod="talker","#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_server_answers_the_kubelets_paths_behind_the_nodes_token() {
    let agent = Agent::start("kubelet-server").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(POD);
    wait_for("talker Ready", Duration::from_secs(60), || {
        let ready = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
        k.jsonpath(&["pod", "talker"], ready) == "True"
    })
    .await;
    let port = k.jsonpath(
        &["node", &agent.node],
        "{.status.daemonEndpoints.kubeletEndpoint.Port}",
    );
    assert!(
        port.parse::<u16>().is_ok_and(|p| p > 0),
        "daemonEndpoints: {port:?}"
    );
    let a = ask(&agent, &port);
    let code = |n: &str| a[n].0.as_str();
    let body = |n: &str| a[n].1.as_str();

    assert_eq!((code("healthz"), body("healthz")), ("200", "ok"));
    assert_eq!(code("healthz-anonymous"), "401");
    assert_eq!(code("healthz-stranger"), "401");
    let pods: serde_json::Value = serde_json::from_str(body("pods")).unwrap();
    assert_eq!(pods["kind"], "PodList");
    let names: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"talker"), "{names:?}");
    assert_eq!(body("logs"), "last\n");
    let stamped = body("logs-timestamps");
    assert!(
        stamped.ends_with("Z last\n") && stamped.starts_with("20"),
        "{stamped:?}"
    );
    assert_eq!(code("logs-missing"), "404");
    assert_eq!((code("run"), body("run")), ("200", "ran here\n"));
    let summary: serde_json::Value = serde_json::from_str(body("summary")).unwrap();
    assert_eq!(summary["node"]["nodeName"], agent.node.as_str());
    assert!(
        body("metrics").contains("kubelet_running_pods"),
        "{}",
        body("metrics")
    );
    assert!(
        body("resource").contains("resource_scrape_error 0"),
        "{}",
        body("resource")
    );
    assert!(
        body("resource").contains("node_memory_working_set_bytes "),
        "{}",
        body("resource")
    );
    assert_eq!(code("configz"), "200");
    assert!(
        body("configz").contains("\"kubeletconfig\""),
        "{}",
        body("configz")
    );
    assert!(
        body("cadvisor").contains("machine_cpu_cores "),
        "{}",
        body("cadvisor")
    );
    assert_eq!(code("unknown"), "404");

    assert_eq!(body("exec-stdout"), "out\n");
    assert_eq!(body("exec-stderr"), "err\n");
    let status: serde_json::Value = serde_json::from_str(body("exec-status")).unwrap();
    assert_eq!(status["reason"], "NonZeroExitCode", "{status}");
    assert_eq!(status["details"]["causes"][0]["message"], "4", "{status}");

    // The readiness probe's runs, counted under the kubelet's names; gone with the pod.
    let probes = body("probes");
    let line = probes.lines().find(|l| l.starts_with(TALKER_READY));
    let line = line.unwrap_or_else(|| panic!("no talker series in:\n{probes}"));
    assert!(
        line.contains(r#"probe_type="Readiness",result="successful"} "#),
        "{line}"
    );
    assert!(probes.contains("# TYPE prober_probe_duration_seconds histogram"));
    k.ok(&["delete", "pod", "talker", "--wait=false"]);
    wait_for("the probe's series gone", Duration::from_secs(30), || {
        !probe_metrics(&agent, &port).contains(TALKER_READY)
    })
    .await;
}

const FINISHES: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: finisher
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "echo done here"]
"#;

/// A pod that finished keeps its last container, and so its log, until it is deleted (as
/// the kubelet keeps them): `kubectl logs` of a completed Job's pod reads it through here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_pods_log_is_served_until_the_pod_is_deleted() {
    let agent = Agent::start("kubelet-finished").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(FINISHES);
    wait_for("finisher Succeeded", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "finisher"], "{.status.phase}") == "Succeeded"
    })
    .await;
    let port = k.jsonpath(
        &["node", &agent.node],
        "{.status.daemonEndpoints.kubeletEndpoint.Port}",
    );
    let log = |agent: &Agent| ask_some(agent, &port, &["logs"], "finisher")["logs-all"].clone();
    // Long after it finished (the worker's clean-up has run by then).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(log(&agent), ("200".to_string(), "done here\n".to_string()));
    k.ok(&["delete", "pod", "finisher"]);
    wait_for(
        "the finished pod's container removed",
        Duration::from_secs(30),
        || log(&agent).0 == "404",
    )
    .await;
}
