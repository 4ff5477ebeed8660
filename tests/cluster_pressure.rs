//! Node pressure in a real cluster: a podvisor node whose pods' directories are on a small
//! tmpfs is filled by a pod the cluster bound to it; the node reports DiskPressure on its
//! Node (kube-controller-manager's node lifecycle controller adds the taint from it), the
//! evicted pod's status (Failed, `Evicted`, the kubelet's message) reaches kube-apiserver, a
//! pod bound past the scheduler is refused by the node's admission, and once the space is
//! back the condition and the taint go.

mod common;

use std::process::Command;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::nodes::{self, MINUTE};

const EVICTION: &str = "[eviction]\nhard = { \"nodefs.available\" = \"24Mi\" }\nmonitoring_period = \"1s\"\npressure_transition_period = \"15s\"\n";

fn pod(ns: &str, name: &str, node: &str, command: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
  nodeName: {node}
  terminationGracePeriodSeconds: 1
  volumes: [{{name: data, emptyDir: {{}}}}]
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    imagePullPolicy: Never
    volumeMounts: [{{name: data, mountPath: /data}}]
    command: [sh, -c, '{command}']
"
    )
}

fn status(admin: &Kubectl, ns: &str, name: &str) -> String {
    admin.jsonpath(
        &["pod", "-n", ns, name],
        "{.status.phase}|{.status.reason}|{.status.message}",
    )
}

async fn failed(admin: &Kubectl, ns: &str, name: &str) -> String {
    common::eventually(&format!("{name} Failed in the cluster"), MINUTE, || async {
        let s = status(admin, ns, name);
        s.starts_with("Failed|").then_some(s)
    })
    .await
}

fn node_field(admin: &Kubectl, node: &str, path: &str) -> String {
    admin.jsonpath(&["node", node], path)
}

const DISK: &str = r#"{.status.conditions[?(@.type=="DiskPressure")].status}/{.status.conditions[?(@.type=="DiskPressure")].reason}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_pressure_reaches_the_node_and_the_evicted_pods_status_reaches_the_cluster() {
    let kubeconfig = common::cluster::bootstrap_kubeconfig();
    let section = format!(
        "[cluster]\nkubeconfig = \"{}\"\n{EVICTION}",
        kubeconfig.display()
    );
    let mut agent = Agent::start_with("pressure", &section).await;
    let (admin, cleanup) = nodes::setup(&agent);
    let (node, ns) = (agent.node.clone(), cleanup.namespace.clone());
    nodes::node_ready(&admin, &node).await;
    // The pods' directories on 64 MiB of their own.
    agent.terminate();
    let pods = agent.state_dir().join("pods");
    std::fs::create_dir_all(&pods).unwrap();
    let mount = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m", "podvisor-pressure"])
        .arg(&pods)
        .output()
        .unwrap();
    assert!(
        mount.status.success(),
        "{}",
        String::from_utf8_lossy(&mount.stderr)
    );
    agent.restart().await;
    nodes::node_ready(&admin, &node).await;
    assert_eq!(
        node_field(&admin, &node, DISK),
        "False/KubeletHasNoDiskPressure"
    );

    admin.apply(&pod(&ns, "quiet", &node, "sleep 3600"));
    common::eventually("the quiet pod to run", MINUTE, || async {
        status(&admin, &ns, "quiet")
            .starts_with("Running")
            .then_some(())
    })
    .await;
    admin.apply(&pod(
        &ns,
        "writer",
        &node,
        "dd if=/dev/zero of=/data/fill bs=1M count=48; sleep 3600",
    ));
    let writer = failed(&admin, &ns, "writer").await;
    assert!(
        writer.starts_with(
            "Failed|Evicted|The node was low on resource: ephemeral-storage. Threshold quantity: 24Mi"
        ),
        "{writer}"
    );
    assert!(
        status(&admin, &ns, "quiet").starts_with("Running"),
        "the quiet pod stays"
    );
    assert_eq!(
        node_field(&admin, &node, DISK),
        "True/KubeletHasDiskPressure"
    );
    common::eventually("the node lifecycle controller's taint", MINUTE, || async {
        node_field(&admin, &node, "{.spec.taints[*].key}")
            .contains("node.kubernetes.io/disk-pressure")
            .then_some(())
    })
    .await;

    // Bound past the scheduler, a pod meets the node's own admission.
    admin.apply(&pod(&ns, "late", &node, "sleep 3600"));
    let late = failed(&admin, &ns, "late").await;
    assert_eq!(
        late,
        "Failed|Evicted|The node had condition: [DiskPressure]. "
    );

    admin.ok(&["delete", "pod", "-n", &ns, "writer", "late", "--wait=false"]);
    common::eventually(
        "DiskPressure to clear",
        Duration::from_secs(120),
        || async {
            let clear = node_field(&admin, &node, DISK) == "False/KubeletHasNoDiskPressure";
            let untainted =
                !node_field(&admin, &node, "{.spec.taints[*].key}").contains("disk-pressure");
            (clear && untainted).then_some(())
        },
    )
    .await;
}
