//! Node-pressure eviction on a real agent against containerd, driven with kubectl, each
//! signal with a threshold set just past what the node has now: a pod filling the node's
//! filesystem (a tmpfs made for the test under the agent's state directory) brings
//! DiskPressure and its taint, is evicted with the kubelet's message while a quiet pod
//! stays, new pods are turned away, and the pressure clears once the space is back; a
//! BestEffort pod using memory is evicted before a Guaranteed one, and under MemoryPressure
//! a pod that does not tolerate its taint is refused while a BestEffort one that does runs;
//! a pod forking hundreds of processes is evicted under PIDPressure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;

const IMAGE: &str = "localhost/podvisor/busybox:test";

/// A tmpfs of `size` mounted at `at` (the agent's drop unmounts everything beneath its
/// directory).
fn mount_tmpfs(at: &Path, size: &str) {
    std::fs::create_dir_all(at).unwrap();
    let out = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size}"),
            "podvisor-evict",
        ])
        .arg(at)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mount: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An agent with `eviction` as its `[eviction]` section, whose state directory (the pods'
/// directories with it) is a tmpfs of `size` when one is asked for.
async fn agent(node: &str, eviction: &str, tmpfs: Option<&str>) -> Agent {
    let extra = format!(
        "[eviction]\n{eviction}\nmonitoring_period = \"1s\"\npressure_transition_period = \"20s\"\n"
    );
    let mut agent = Agent::start_with(node, &extra).await;
    if let Some(size) = tmpfs {
        agent.terminate();
        mount_tmpfs(&agent.state_dir(), size);
        agent.restart().await;
    }
    agent
}

fn pod(name: &str, body: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 2\n{body}"
    )
}

fn sleeper(name: &str) -> String {
    pod(
        name,
        &format!("  containers:\n  - {{name: main, image: {IMAGE}, command: [sleep, '3600']}}\n"),
    )
}

/// A sleeper tolerating the `node.kubernetes.io/<taint>` taint, as a DaemonSet's pods do.
fn tolerant(name: &str, taint: &str) -> String {
    pod(
        name,
        &format!(
            "  tolerations: [{{key: node.kubernetes.io/{taint}, operator: Exists, effect: NoSchedule}}]\n  containers:\n  - {{name: main, image: {IMAGE}, command: [sleep, '3600']}}\n"
        ),
    )
}

/// The pod's phase, reason and message.
fn state(k: &Kubectl, name: &str) -> (String, String, String) {
    let s = k.jsonpath(
        &["pod", name],
        "{.status.phase}|{.status.reason}|{.status.message}",
    );
    let mut it = s.splitn(3, '|').map(str::to_string);
    let mut next = || it.next().unwrap_or_default();
    (next(), next(), next())
}

async fn phase_is(
    k: &Kubectl,
    name: &str,
    phase: &str,
    limit: Duration,
) -> (String, String, String) {
    common::eventually(&format!("{name} to be {phase}"), limit, || async {
        let s = state(k, name);
        (s.0 == phase).then_some(s)
    })
    .await
}

/// The node's condition `kind`: status and reason.
fn condition(k: &Kubectl, node: &str, kind: &str) -> String {
    k.jsonpath(
        &["node", node],
        &format!("{{.status.conditions[?(@.type==\"{kind}\")].status}}/{{.status.conditions[?(@.type==\"{kind}\")].reason}}"),
    )
}

fn taints(k: &Kubectl, node: &str) -> String {
    k.jsonpath(&["node", node], "{.spec.taints[*].key}")
}

/// Every event with `reason`, as `Kind/name: message` lines.
fn events(k: &Kubectl, reason: &str) -> String {
    let line = |e: &serde_json::Value| {
        let (o, m) = (&e["involvedObject"], e["message"].as_str().unwrap_or(""));
        format!(
            "{}/{}: {m}\n",
            o["kind"].as_str().unwrap_or(""),
            o["name"].as_str().unwrap_or("")
        )
    };
    k.events(reason).iter().map(line).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_filling_the_nodes_filesystem_is_evicted_and_the_pressure_clears() {
    let agent = agent(
        "evict-disk",
        "hard = { \"nodefs.available\" = \"24Mi\" }",
        Some("64m"),
    )
    .await;
    let k = Kubectl::for_agent(&agent);
    let node = agent.node.clone();
    k.apply(&sleeper("quiet"));
    phase_is(&k, "quiet", "Running", Duration::from_secs(60)).await;
    assert_eq!(
        condition(&k, &node, "DiskPressure"),
        "False/KubeletHasNoDiskPressure"
    );
    let started = std::time::Instant::now();
    k.apply(&pod(
        "writer",
        &format!(
            "  volumes: [{{name: data, emptyDir: {{}}}}]\n  containers:\n  - name: main\n    image: {IMAGE}\n    volumeMounts: [{{name: data, mountPath: /data}}]\n    command: [sh, -c, 'dd if=/dev/zero of=/data/fill bs=1M count=48; sleep 3600']\n"
        ),
    ));
    let (_, reason, message) = phase_is(&k, "writer", "Failed", Duration::from_secs(60)).await;
    println!(
        "writer evicted {:.1} s after it was created",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(reason, "Evicted");
    assert!(
        message.starts_with(
            "The node was low on resource: ephemeral-storage. Threshold quantity: 24Mi, available: "
        ),
        "{message}"
    );
    assert_eq!(state(&k, "quiet").0, "Running", "the quiet pod stays");
    assert_eq!(
        condition(&k, &node, "DiskPressure"),
        "True/KubeletHasDiskPressure"
    );
    assert!(taints(&k, &node).contains("node.kubernetes.io/disk-pressure"));
    let disruption = k.jsonpath(
        &["pod", "writer"],
        "{.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
    );
    assert_eq!(disruption, "TerminationByKubelet");
    assert!(events(&k, "EvictionThresholdMet").contains(&format!(
        "Node/{node}: Attempting to reclaim ephemeral-storage"
    )));
    assert!(events(&k, "Evicted").contains("Pod/writer: The node was low on resource"));

    // Under pressure a new pod is turned away: by the API, standing in for the scheduler,
    // for the taint; by the kubelet's admission, one tolerating it (a DaemonSet's pod).
    let refused = k.run_with(&["apply", "-f", "-"], &sleeper("late"));
    assert!(
        !refused.ok && refused.stderr.contains("node.kubernetes.io/disk-pressure"),
        "{}",
        refused.stderr
    );
    k.apply(&tolerant("late", "disk-pressure"));
    let (_, reason, message) = phase_is(&k, "late", "Failed", Duration::from_secs(30)).await;
    assert_eq!(
        (reason.as_str(), message.as_str()),
        ("Evicted", "The node had condition: [DiskPressure]. ")
    );

    // The space back, the condition and the taint go after the transition period.
    k.ok(&["delete", "pod", "writer", "late", "--wait=false"]);
    common::eventually("DiskPressure to clear", Duration::from_secs(90), || async {
        (condition(&k, &node, "DiskPressure") == "False/KubeletHasNoDiskPressure").then_some(())
    })
    .await;
    assert!(
        !taints(&k, &node).contains("disk-pressure"),
        "{}",
        taints(&k, &node)
    );
    k.apply(&sleeper("after"));
    phase_is(&k, "after", "Running", Duration::from_secs(60)).await;
}

/// Bytes of memory available now, as the agent measures it (the root memory cgroup's
/// working set, off the machine's memory).
fn memory_available() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse::<u64>()
        .unwrap()
        * 1024;
    let root = PathBuf::from("/sys/fs/cgroup/memory");
    let usage: u64 = std::fs::read_to_string(root.join("memory.usage_in_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(root.join("memory.stat")).unwrap();
    let inactive: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("total_inactive_file "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    total - (usage - inactive.min(usage))
}

/// A pod that puts `mib` MiB in a memory-backed emptyDir (charged to it as memory).
fn memory_hog(name: &str, mib: u32, resources: &str) -> String {
    pod(
        name,
        &format!(
            "  volumes: [{{name: ram, emptyDir: {{medium: Memory, sizeLimit: 1Gi}}}}]\n  containers:\n  - name: main\n    image: {IMAGE}\n    {resources}\n    volumeMounts: [{{name: ram, mountPath: /ram}}]\n    command: [sh, -c, 'dd if=/dev/zero of=/ram/fill bs=1M count={mib}; sleep 3600']\n"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_pressure_evicts_best_effort_before_guaranteed_and_admits_only_what_tolerates_it() {
    if !Path::new("/sys/fs/cgroup/memory/memory.usage_in_bytes").exists() {
        panic!(
            "this test reads memory as the agent does on a cgroup v1 host; this host has no v1 memory controller"
        );
    }
    let guaranteed =
        "resources: {requests: {cpu: 100m, memory: 700Mi}, limits: {cpu: 100m, memory: 700Mi}}";
    // 750 MiB below what is available now: the Guaranteed pod's 250 MiB stay above it, the
    // BestEffort pod's 1000 more cross it, each with some 500 MiB to spare for what the
    // tests running beside take or give back.
    let threshold = (memory_available() >> 20).saturating_sub(500 + 250);
    let agent = agent(
        "evict-mem",
        &format!("hard = {{ \"memory.available\" = \"{threshold}Mi\" }}"),
        None,
    )
    .await;
    let k = Kubectl::for_agent(&agent);
    let node = agent.node.clone();
    k.apply(&memory_hog("guaranteed", 250, guaranteed));
    phase_is(&k, "guaranteed", "Running", Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        condition(&k, &node, "MemoryPressure"),
        "False/KubeletHasSufficientMemory"
    );
    // Only the BestEffort pod's 1000 MiB take the node past the threshold.
    k.apply(&memory_hog("besteffort", 1000, ""));
    let (_, reason, message) = phase_is(&k, "besteffort", "Failed", Duration::from_secs(90)).await;
    assert_eq!(reason, "Evicted");
    assert!(
        message.starts_with("The node was low on resource: memory. Threshold quantity: "),
        "{message}"
    );
    assert!(message.contains("Container main was using "), "{message}");
    assert_eq!(
        state(&k, "guaranteed").0,
        "Running",
        "the Guaranteed pod stays"
    );
    assert_eq!(
        condition(&k, &node, "MemoryPressure"),
        "True/KubeletHasInsufficientMemory"
    );
    assert!(taints(&k, &node).contains("node.kubernetes.io/memory-pressure"));
    // Under memory pressure alone: a pod that does not tolerate the taint is refused by
    // the API (standing in for the scheduler); a BestEffort one that tolerates it is
    // admitted, as the kubelet admits it.
    let refused = k.run_with(&["apply", "-f", "-"], &sleeper("late"));
    assert!(
        !refused.ok
            && refused
                .stderr
                .contains("node.kubernetes.io/memory-pressure"),
        "{}",
        refused.stderr
    );
    k.apply(&tolerant("late-tolerant", "memory-pressure"));
    phase_is(&k, "late-tolerant", "Running", Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_forking_hundreds_of_processes_is_evicted_under_pid_pressure() {
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap();
    let tasks: u64 = loadavg
        .split_whitespace()
        .nth(3)
        .unwrap()
        .split('/')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // 1,500 processes cross it with some 700 to spare for what other tests start or end.
    let threshold = max - tasks - 800;
    let agent = agent(
        "evict-pid",
        &format!("hard = {{ \"pid.available\" = \"{threshold}\" }}"),
        None,
    )
    .await;
    let k = Kubectl::for_agent(&agent);
    let node = agent.node.clone();
    k.apply(&sleeper("calm"));
    phase_is(&k, "calm", "Running", Duration::from_secs(60)).await;
    k.apply(&pod(
        "forker",
        &format!("  containers:\n  - name: main\n    image: {IMAGE}\n    command: [sh, -c, 'for i in $(seq 1500); do sleep 3600 & done; wait']\n"),
    ));
    let (_, reason, message) = phase_is(&k, "forker", "Failed", Duration::from_secs(90)).await;
    assert_eq!(reason, "Evicted");
    assert!(
        message.starts_with("The node was low on resource: pids. "),
        "{message}"
    );
    assert_eq!(state(&k, "calm").0, "Running");
    assert_eq!(
        condition(&k, &node, "PIDPressure"),
        "True/KubeletHasInsufficientPID"
    );
    assert!(taints(&k, &node).contains("node.kubernetes.io/pid-pressure"));
}
