//! In-place resize through `kubectl patch --subresource resize` against a real agent and
//! containerd: the container's CPU limit changes in its cgroup without a restart, its
//! memory with one when its resize policy says so, the status reports what it runs with
//! and the generation it saw, and the node's API refuses what kube-apiserver refuses. CI
//! runs it on containerd 1.6, 1.7 and 2.1: each reports and updates a container's resources.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  terminationGracePeriodSeconds: 0
  initContainers:
  - name: side
    image: localhost/podvisor/busybox:test
    restartPolicy: Always
    command: [sleep, "3600"]
    resources:
      requests: {cpu: 50m}
      limits: {cpu: 100m}
  containers:
  - name: app
    image: localhost/podvisor/busybox:test
    command: [sleep, "3600"]
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    - {resourceName: memory, restartPolicy: RestartContainer}
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
"#;

fn resize(k: &Kubectl, resources: &str) -> common::kubectl::Run {
    let patch =
        format!(r#"{{"spec":{{"containers":[{{"name":"app","resources":{resources}}}]}}}}"#);
    k.run(&[
        "patch",
        "pod",
        "sized",
        "--subresource",
        "resize",
        "-p",
        &patch,
    ])
}

/// The first line of a cgroup file as the app container sees it (v1, or the v2
/// equivalent).
fn cgroup(k: &Kubectl, v1: &str, v2: &str) -> String {
    cgroup_of(k, "app", v1, v2)
}

fn cgroup_of(k: &Kubectl, container: &str, v1: &str, v2: &str) -> String {
    let script = format!("cat /sys/fs/cgroup/{v1} 2>/dev/null || cat /sys/fs/cgroup/{v2}");
    // cpu.max says "<quota> <period>": the quota, as v1's file has it alone.
    let out = k.ok(&["exec", "sized", "-c", container, "--", "sh", "-c", &script]);
    let first = out.lines().next().unwrap_or_default();
    first.split(' ').next().unwrap_or_default().to_string()
}

async fn wait_resized(k: &Kubectl, what: &str, path: &str, want: &str) {
    wait_for(what, Duration::from_secs(60), || {
        let now = k.jsonpath(&["pod", "sized"], path);
        let conditions = k.jsonpath(&["pod", "sized"], "{.status.conditions[*].type}");
        now == want && !conditions.contains("PodResize")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_changes_in_place_and_memory_restarts_as_the_policy_says() {
    let agent = Agent::start("resize").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(POD);
    wait_for("sized Ready", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "sized"], "{.status.containerStatuses[0].ready}") == "true"
    })
    .await;
    let status = "{.status.containerStatuses[0]";
    assert_eq!(
        k.jsonpath(
            &["pod", "sized"],
            &format!("{status}.resources.limits.cpu}}")
        ),
        "200m",
        "a running container reports its resources"
    );
    assert_eq!(cgroup(&k, "cpu/cpu.cfs_quota_us", "cpu.max"), "20000");

    let r = resize(&k, r#"{"limits":{"cpu":"400m"}}"#);
    assert!(r.ok, "{}", r.stderr);
    let cpu_limit = format!("{status}.resources.limits.cpu}}");
    wait_resized(&k, "CPU limit 400m", &cpu_limit, "400m").await;
    assert_eq!(cgroup(&k, "cpu/cpu.cfs_quota_us", "cpu.max"), "40000");
    let restarts = format!("{status}.restartCount}}");
    assert_eq!(
        k.jsonpath(&["pod", "sized"], &restarts),
        "0",
        "CPU: NotRequired"
    );
    let generations = "{.metadata.generation} {.status.observedGeneration}";
    assert_eq!(k.jsonpath(&["pod", "sized"], generations), "2 2");

    // A sidecar is resized in place too.
    let patch =
        r#"{"spec":{"initContainers":[{"name":"side","resources":{"limits":{"cpu":"300m"}}}]}}"#;
    let r = k.run(&[
        "patch",
        "pod",
        "sized",
        "--subresource",
        "resize",
        "-p",
        patch,
    ]);
    assert!(r.ok, "{}", r.stderr);
    let side = "{.status.initContainerStatuses[0]";
    wait_resized(
        &k,
        "sidecar CPU limit 300m",
        &format!("{side}.resources.limits.cpu}}"),
        "300m",
    )
    .await;
    assert_eq!(
        cgroup_of(&k, "side", "cpu/cpu.cfs_quota_us", "cpu.max"),
        "30000"
    );
    let side_restarts = format!("{side}.restartCount}}");
    assert_eq!(k.jsonpath(&["pod", "sized"], &side_restarts), "0");

    let r = resize(&k, r#"{"limits":{"memory":"256Mi"}}"#);
    assert!(r.ok, "{}", r.stderr);
    let memory_limit = format!("{status}.resources.limits.memory}}");
    wait_resized(&k, "memory limit 256Mi", &memory_limit, "256Mi").await;
    wait_for("the restarted app Ready", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "sized"], &format!("{status}.ready}}")) == "true"
    })
    .await;
    assert_eq!(
        k.jsonpath(&["pod", "sized"], &restarts),
        "1",
        "memory: RestartContainer"
    );
    let bytes = cgroup(&k, "memory/memory.limit_in_bytes", "memory.max");
    assert_eq!(bytes, (256u64 << 20).to_string());
    assert_eq!(
        k.jsonpath(
            &["pod", "sized"],
            &format!("{status}.allocatedResources.memory}}")
        ),
        "64Mi"
    );

    // What kube-apiserver refuses, the node's API refuses with its words.
    let refused = [
        (
            r#"{"limits":{"cpu":null}}"#,
            "resource limits cannot be removed",
        ),
        (
            r#"{"limits":{"ephemeral-storage":"1Gi"}}"#,
            "only cpu and memory resources are mutable",
        ),
        (
            r#"{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}"#,
            "node didn't have enough allocatable resources: cpu, requested: 1000000",
        ),
    ];
    for (patch, why) in refused {
        let r = resize(&k, patch);
        assert!(!r.ok && r.stderr.contains(why), "{patch}: {}", r.stderr);
    }
    // Requests equal to limits everywhere: Burstable would become Guaranteed.
    let equal =
        r#"{"requests":{"cpu":"300m","memory":"64Mi"},"limits":{"cpu":"300m","memory":"64Mi"}}"#;
    let app =
        r#"{"requests":{"cpu":"400m","memory":"256Mi"},"limits":{"cpu":"400m","memory":"256Mi"}}"#;
    let guaranteed = format!(
        r#"{{"spec":{{"initContainers":[{{"name":"side","resources":{equal}}}],"containers":[{{"name":"app","resources":{app}}}]}}}}"#
    );
    let r = k.run(&[
        "patch",
        "pod",
        "sized",
        "--subresource",
        "resize",
        "-p",
        &guaranteed,
    ]);
    let why = "Pod QOS Class may not change as a result of resizing";
    assert!(!r.ok && r.stderr.contains(why), "{}", r.stderr);
    let main = k.run(&[
        "patch",
        "pod",
        "sized",
        "-p",
        r#"{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"1"}}}]}}"#,
    ]);
    assert!(!main.ok, "resources change through pods/resize only");
    k.ok(&["delete", "pod", "sized", "--wait=true"]);
}

/// Upstream's "decrease memory limit below usage": a limit lowered to less than the
/// container uses is not applied; the pod says why (`PodResizeInProgress`, `Error`) until
/// the limit is put back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_limit_below_what_the_container_uses_is_refused_with_the_reason() {
    let agent = Agent::start("resize-usage").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(
        r#"apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: localhost/podvisor/busybox:test
    command: [sh, -c, "dd if=/dev/zero of=/dev/shm/fill bs=1M count=40 && sleep 3600"]
    resources:
      requests: {memory: 100Mi}
      limits: {memory: 100Mi}
"#,
    );
    wait_for("sized Ready", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "sized"], "{.status.containerStatuses[0].ready}") == "true"
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await; // dd has filled its 40 MiB
    let low = r#"{"requests":{"memory":"20Mi"},"limits":{"memory":"20Mi"}}"#;
    assert!(resize(&k, low).ok);
    let condition = r#"{.status.conditions[?(@.type=="PodResizeInProgress")].reason}|{.status.conditions[?(@.type=="PodResizeInProgress")].message}"#;
    wait_for(
        "the resize in progress, in error",
        Duration::from_secs(60),
        || {
            k.jsonpath(&["pod", "sized"], condition)
                .starts_with("Error|")
        },
    )
    .await;
    let message = k.jsonpath(&["pod", "sized"], condition);
    assert!(
        message.contains("memory limit (20971520) below current usage"),
        "{message}"
    );
    let limit = "{.status.containerStatuses[0].resources.limits.memory}";
    assert_eq!(
        k.jsonpath(&["pod", "sized"], limit),
        (100u64 << 20).to_string()
    );
    let back = r#"{"requests":{"memory":"100Mi"},"limits":{"memory":"100Mi"}}"#;
    assert!(resize(&k, back).ok);
    wait_resized(&k, "the limit back", limit, "100Mi").await;
    k.ok(&["delete", "pod", "sized", "--wait=true"]);
}
