//! The whole control plane stopped for 60 s under a node of the cluster: pods run on, a
//! crashing container restarts by its policy (its environment from a ConfigMap and a
//! Secret, kept on the node), the agent SIGKILLed and started again during the outage
//! adopts its pods with no container restart, and once the control plane is
//! back every pod's status in it is the node's within 10 s. Alone in its test binary:
//! stopping the control plane would fail every other cluster test running beside it.

mod common;

use std::time::{Duration, Instant};

use common::cluster::Stopped;
use common::eventually;
use common::kubectl::Kubectl;
use common::nodes::*;

fn crasher(ns: &str, node: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: crasher, namespace: {ns}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    command: [sh, -c, 'sleep 2; exit 3']
    env:
    - {{name: FROM_MAP, valueFrom: {{configMapKeyRef: {{name: settings, key: level}}}}}}
    - {{name: FROM_SECRET, valueFrom: {{secretKeyRef: {{name: creds, key: token}}}}}}
"
    )
}

const ID: &str = "{.status.containerStatuses[0].containerID}";
const RESTARTS: &str = "{.status.containerStatuses[0].restartCount}";

fn restarts(k: &Kubectl, ns: &str, pod: &str) -> u32 {
    let r = k.jsonpath(&["pod", pod, "-n", ns], RESTARTS);
    r.parse()
        .unwrap_or_else(|_| panic!("restartCount of {pod}: {r:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_on_while_the_control_plane_is_stopped_and_an_agent_restart_adopts_them() {
    let mut agent = join("cn-outage", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&pod(&ns, "steady", &node));
    // Its environment comes from a ConfigMap and a Secret: a restart after the agent's own
    // restart in the outage finds them kept on the node.
    let cm = [
        "create",
        "configmap",
        "settings",
        "-n",
        &ns,
        "--from-literal=level=3",
    ];
    admin.ok(&cm);
    let secret = [
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        &ns,
        "--from-literal=token=t",
    ];
    admin.ok(&secret);
    admin.apply(&crasher(&ns, &node));
    eventually("both pods started", MINUTE, || async {
        let steady = admin.jsonpath(&["pod", "steady", "-n", &ns], ID);
        let crashed = admin.jsonpath(&["pod", "crasher", "-n", &ns], RESTARTS);
        (steady.starts_with("containerd://") && crashed.parse::<u32>().is_ok_and(|n| n >= 1))
            .then_some(())
    })
    .await;
    let steady_id = admin.jsonpath(&["pod", "steady", "-n", &ns], ID);

    let outage = Stopped::now();
    let began = Instant::now();
    let local = Kubectl::for_agent(&agent);
    let crashed_before = restarts(&local, &ns, "crasher");
    tokio::time::sleep(Duration::from_secs(10)).await;
    agent.kill9();
    agent.restart().await;
    let local = Kubectl::for_agent(&agent);
    eventually(
        "the crashing container restarted during the outage",
        MINUTE,
        || async { (restarts(&local, &ns, "crasher") > crashed_before).then_some(()) },
    )
    .await;
    assert_eq!(local.jsonpath(&["pod", "steady", "-n", &ns], ID), steady_id);
    assert_eq!(restarts(&local, &ns, "steady"), 0);
    let left = Duration::from_secs(60).saturating_sub(began.elapsed());
    tokio::time::sleep(left).await;
    assert_eq!(
        local.jsonpath(&["pod", "steady", "-n", &ns], ID),
        steady_id,
        "adopted, never restarted"
    );

    drop(outage);
    let back = Instant::now();
    eventually(
        "the cluster's statuses the node's again",
        Duration::from_secs(10),
        || async {
            let crashes = restarts(&local, &ns, "crasher");
            let up = admin.run(&[
                "get",
                "pod",
                "crasher",
                "-n",
                &ns,
                &format!("-o=jsonpath={RESTARTS}"),
            ]);
            let steady = admin.run(&[
                "get",
                "pod",
                "steady",
                "-n",
                &ns,
                &format!("-o=jsonpath={ID}"),
            ]);
            (up.stdout
                .parse::<u32>()
                .is_ok_and(|n| n >= crashes.min(crashed_before + 1))
                && steady.stdout == steady_id)
                .then_some(())
        },
    )
    .await;
    eprintln!(
        "statuses true in the cluster {:?} after it came back",
        back.elapsed()
    );
    assert_eq!(restarts(&admin, &ns, "steady"), 0);
    drop(cleanup);
}
