//! What pods use (issue 18, item 3), the way people read it: the kubelet's
//! `/stats/summary` on the debug endpoint, `kubectl top` against the agent's
//! `metrics.k8s.io`, and `podvisor top`; a pod that burns CPU shows more than an idle one.

mod common;

use std::process::Command;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn pod(name: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {{name: main, image: {IMAGE}, command: [sh, -c, \"{script}\"]}}\n"
    )
}

/// The millicores `kubectl top pod` prints for pod `name` (`12m`).
fn millicores(table: &str, name: &str) -> Option<u64> {
    let row = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))?;
    row.split_whitespace()
        .nth(1)?
        .strip_suffix('m')?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_and_node_usage_reach_kubectl_top_podvisor_top_and_the_summary_api() {
    let agent = Agent::start("top").await;
    // About a tenth of a core: a shell counting, then resting.
    let burn = "trap 'exit 0' TERM; while true; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.05; done";
    agent.write("burn.yaml", &pod("burn", burn));
    agent.write(
        "idle.yaml",
        &pod("idle", "trap 'exit 0' TERM; sleep 3600 & wait"),
    );
    for name in ["burn", "idle"] {
        agent
            .wait_pod(name, "running", Duration::from_secs(30), |p| {
                p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
            .await;
    }
    let k = Kubectl::for_agent(&agent);
    let resources = k.ok(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1"]);
    assert!(resources.contains("PodMetrics") && resources.contains("NodeMetrics"));

    // The first question starts the sampling; a rate needs two samples.
    let (burn_name, idle_name) = (agent.name("burn"), agent.name("idle"));
    let table = common::eventually("kubectl top pod", Duration::from_secs(30), || async {
        let r = k.run(&["top", "pod"]);
        (r.ok && millicores(&r.stdout, &burn_name).is_some()).then_some(r.stdout)
    })
    .await;
    let (burning, idle) = (
        millicores(&table, &burn_name).unwrap(),
        millicores(&table, &idle_name).unwrap(),
    );
    assert!(table.contains("MEMORY(bytes)"), "{table}");
    assert!(
        burning > idle && burning >= 10,
        "burn {burning}m, idle {idle}m:\n{table}"
    );

    let node = k.ok(&["top", "node"]);
    eprintln!("kubectl top pod:\n{table}\nkubectl top node:\n{node}");
    assert!(
        node.contains(&agent.node) && node.contains("CPU(%)"),
        "{node}"
    );
    // The node's CPU is read between two samples too: the burning pod is part of it.
    assert!(
        millicores(&node, &agent.node).is_some_and(|m| m >= 10),
        "{node}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_podvisor"))
        .args(["top", "pods", "--kubeconfig"])
        .arg(agent.dir.join("state/kubeconfig"))
        .output()
        .unwrap();
    let ours = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        millicores(&ours, &burn_name).is_some_and(|m| m >= 10),
        "{ours}"
    );

    let body = podvisor_debug::client::get(&agent.endpoint, "/stats/summary", None)
        .await
        .unwrap();
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(s["node"]["nodeName"], agent.node.as_str());
    assert!(s["node"]["memory"]["workingSetBytes"].as_u64().unwrap() > 0);
    let pods = s["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2, "{s}");
    for p in pods {
        let c = &p["containers"][0];
        assert_eq!(c["name"], "main");
        assert!(
            c["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0,
            "{p}"
        );
        assert!(c["memory"]["workingSetBytes"].as_u64().unwrap() > 0, "{p}");
        assert!(p["podRef"]["uid"].as_str().is_some_and(|u| !u.is_empty()));
    }
}
