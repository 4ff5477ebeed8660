//! A pod's namespaces against containerd, through a real agent: each container has a PID
//! namespace of its own (it cannot see the other containers' processes, and its first
//! process is PID 1), unless the pod shares one (`shareProcessNamespace`); and a shell as
//! PID 1, which ignores SIGTERM, is stopped at the end of its grace period.

mod common;

use std::time::{Duration, Instant};

use common::agent::Agent;
use k8s_openapi::api::core::v1::Pod;

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// A pod of two containers: `a` sleeps with a number only it uses; `b` writes what it sees
/// of the processes (`ps`) to `/out/<name>`.
fn pair(name: &str, out: &std::path::Path, shared: bool) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  shareProcessNamespace: {shared}
  terminationGracePeriodSeconds: 1
  volumes: [{{name: out, hostPath: {{path: {out}}}}}]
  containers:
  - name: a
    image: {IMAGE}
    command: ["sleep", "3601"]
  - name: b
    image: {IMAGE}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "sleep 1; ps -o pid,args > /out/{name}.tmp; mv /out/{name}.tmp /out/{name}; exec sleep 3602"]
"#,
        out = out.display()
    )
}

async fn seen(agent: &Agent, name: &str) -> String {
    let file = agent.out_dir().join(name);
    common::eventually("the process list", Duration::from_secs(60), || {
        let f = file.clone();
        async move { std::fs::read_to_string(f).ok() }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_container_has_a_pid_namespace_of_its_own_unless_the_pod_shares_one() {
    let agent = Agent::start("ns-pid").await;
    agent.write("own.yaml", &pair("own", &agent.out_dir(), false));
    agent.write("shared.yaml", &pair("shared", &agent.out_dir(), true));
    let own = seen(&agent, "own").await;
    assert!(!own.contains("3601"), "b sees a's processes:\n{own}");
    let first = own.lines().nth(1).unwrap_or_default();
    assert!(
        first.split_whitespace().next() == Some("1") && first.contains("sh"),
        "b's shell is PID 1 of its own namespace:\n{own}"
    );
    let shared = seen(&agent, "shared").await;
    assert!(
        shared.contains("sleep 3601"),
        "a shared namespace shows a's sleep:\n{shared}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_as_pid_1_is_stopped_at_the_end_of_its_grace_period() {
    let agent = Agent::start("ns-grace").await;
    // No handler: as PID 1 of its namespace the shell ignores SIGTERM, as it would under
    // the kubelet, so only SIGKILL at the deadline stops it.
    agent.write(
        "loop.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: loop}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: {IMAGE}
    command: ["sh", "-c", "while true; do sleep 0.1; done"]
"#
        ),
    );
    agent
        .wait_pod("loop", "running", Duration::from_secs(60), |p| {
            phase(p) == "Running"
        })
        .await;
    let rt = common::runtime().await;
    let t0 = Instant::now();
    agent.remove("loop.yaml");
    // Caught between its exit and its removal: how it ended, and when.
    let (code, after) =
        common::eventually("the container's exit", Duration::from_secs(30), || async {
            use podvisor_cri::Runtime;
            let pods = agent.runtime_pods().await;
            let c = pods
                .iter()
                .flat_map(|p| &p.containers)
                .find(|c| c.name == "app")?;
            let s = rt.container_status(&c.id).await.ok()?;
            (s.state == podvisor_cri::ContainerState::Exited).then(|| (s.exit_code, t0.elapsed()))
        })
        .await;
    assert_eq!(code, 137, "SIGKILL at the deadline: SIGTERM was ignored");
    assert!(
        after >= Duration::from_millis(2800),
        "stopped after {after:?}"
    );
}
