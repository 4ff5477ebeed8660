//! The Job controller on a real agent against containerd, driven with kubectl and the
//! Python client: completions 3 with parallelism 2 complete, never more than two at once;
//! an always-failing Job stops at its backoffLimit; a FailJob rule fails at the matching
//! exit; the deadline stops a Job; a finished Job goes after its TTL; an agent SIGKILLed
//! in the middle of a Job counts every completion exactly once.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::pod_watch::{PodWatch, Pods};

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn job(name: &str, spec: &str, command: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
{spec}
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: {IMAGE}
        command: ["/bin/sh", "-c", "{command}"]
"#
    )
}

fn wait(k: &Kubectl, name: &str, condition: &str, secs: u32) {
    let target = format!("job/{name}");
    let r = k.run(&[
        "wait",
        &format!("--for=condition={condition}"),
        &target,
        &format!("--timeout={secs}s"),
    ]);
    let dump = k.run(&["get", "job", name, "-o", "yaml"]).stdout;
    assert!(r.ok, "{name} never {condition}: {}\n{dump}", r.stderr);
}

fn field(k: &Kubectl, name: &str, path: &str) -> String {
    k.jsonpath(&["job", name], path)
}

/// Why the Job failed (its `Failed` condition's reason).
fn failed_reason(k: &Kubectl, name: &str) -> String {
    field(
        k,
        name,
        "{.status.conditions[?(@.type==\"Failed\")].reason}",
    )
}

/// Names of the pods a Job made (`job-name` label), any state.
fn pod_count(k: &Kubectl, name: &str) -> usize {
    let out = k.ok(&[
        "get",
        "pods",
        "-l",
        &format!("job-name={name}"),
        "-o",
        "name",
    ]);
    out.lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_with_parallelism_and_the_ways_a_job_fails() {
    let agent = Agent::start("jobs").await;
    let k = Kubectl::for_agent(&agent);
    let running = |p: &Pods| {
        let n = p
            .values()
            .filter(|s| s.phase == "Running" && !s.deleting)
            .count();
        (n > 2).then(|| format!("{n} running at once: {p:?}"))
    };
    let watch = PodWatch::start(&k, "job-name=pi", Box::new(running));
    k.apply(&job("pi", "  completions: 3\n  parallelism: 2", "sleep 1"));
    wait(&k, "pi", "complete", 90);
    assert!(watch.stop().is_empty());
    assert_eq!(
        field(&k, "pi", "{.status.succeeded}/{.status.failed}"),
        "3/"
    );
    assert_eq!(pod_count(&k, "pi"), 3, "one pod per completion");
    let table = k.ok(&["get", "job", "pi"]);
    assert!(
        table.contains("Complete") && table.contains("3/3"),
        "{table}"
    );
    let finalizers = k.jsonpath(
        &["pods", "-l", "job-name=pi"],
        "{.items[*].metadata.finalizers}",
    );
    assert!(
        !finalizers.contains("job-tracking"),
        "counted pods keep no finalizer: {finalizers}"
    );

    k.apply(&job("fail", "  backoffLimit: 1", "exit 1"));
    wait(&k, "fail", "failed", 90);
    assert_eq!(failed_reason(&k, "fail"), "BackoffLimitExceeded");
    assert_eq!(field(&k, "fail", "{.status.failed}"), "2");
    assert_eq!(pod_count(&k, "fail"), 2, "the first try and one retry");

    let policy = "  backoffLimit: 6\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n      onExitCodes: {operator: In, values: [42]}";
    k.apply(&job("fatal", policy, "exit 42"));
    wait(&k, "fatal", "failed", 60);
    assert_eq!(failed_reason(&k, "fatal"), "PodFailurePolicy");
    assert_eq!(pod_count(&k, "fatal"), 1);

    k.apply(&job("slow", "  activeDeadlineSeconds: 3", "sleep 600"));
    wait(&k, "slow", "failed", 60);
    assert_eq!(failed_reason(&k, "slow"), "DeadlineExceeded");
    let phase = k.jsonpath(&["pods", "-l", "job-name=slow"], "{.items[*].status.phase}");
    assert!(!phase.contains("Running"), "its pod was stopped: {phase}");

    k.apply(&job("endless", "  parallelism: 2", "sleep 600"));
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.active}=2",
        "job/endless",
        "--timeout=60s",
    ]);
    k.ok(&["delete", "job", "endless", "--wait=false"]);
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = pod_count(&k, "endless");
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(left, 0, "a deleted job's pods lose their finalizer and go");

    k.apply(&job("brief", "  ttlSecondsAfterFinished: 2", "true"));
    wait(&k, "brief", "complete", 60);
    let mut gone = false;
    for _ in 0..50 {
        if !k.run(&["get", "job", "brief"]).ok && pod_count(&k, "brief") == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(gone, "a finished job goes, with its pods, after its TTL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_interrupted_by_sigkill_counts_each_completion_once() {
    let mut agent = Agent::start("jobs-kill").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&job(
        "count",
        "  completions: 5\n  parallelism: 1",
        "sleep 0.5",
    ));
    for _ in 0..100 {
        if field(&k, "count", "{.status.succeeded}") == "2" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    agent.kill9();
    agent.restart().await;
    let k = Kubectl::for_agent(&agent);
    wait(&k, "count", "complete", 120);
    assert_eq!(field(&k, "count", "{.status.succeeded}"), "5");
    // Each pod: phase, then its container's termination reason and message.
    let path = r#"{range .items[*]}{.status.phase}|{.status.containerStatuses[0].state.terminated.reason}|{.status.containerStatuses[0].state.terminated.message}{"\n"}{end}"#;
    let pods = k.jsonpath(&["pods", "-l", "job-name=count"], path);
    let succeeded = pods.lines().filter(|l| l.starts_with("Succeeded|")).count();
    assert_eq!(succeeded, 5, "no completion ran twice:\n{pods}");
    // A start the kill cut short (containerd cancels the task the dead agent asked for)
    // fails that pod, as it would under the kubelet, and the Job replaces it; any other
    // failure is a bug.
    for l in pods.lines().filter(|l| !l.starts_with("Succeeded|")) {
        assert!(
            l.starts_with("Failed|StartError|") && l.contains("context canceled"),
            "a pod failed otherwise than by the interrupted start:\n{pods}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_runs_a_job_and_rolls_a_deployment() {
    let agent = Agent::start("jobs-python").await;
    let k = Kubectl::for_agent(&agent);
    let out = common::python()
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/workloads.py"
        ))
        .arg(&k.kubeconfig)
        .args([IMAGE, "localhost/podvisor/busybox:v2"])
        .output()
        .unwrap();
    let stdout = common::succeeded(out);
    for fact in [
        "job complete succeeded 2",
        "deployment available 2",
        "rolled out [0, 2]",
        "scaled 3",
        "orphanDependents with a policy refused 422",
        "orphaned 2 owned 0",
    ] {
        assert!(stdout.contains(fact), "{fact}: {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_makes_deployments_and_jobs() {
    let agent = Agent::start("jobs-create").await;
    let k = Kubectl::for_agent(&agent);
    let serve = "trap 'exit 0' TERM; while true; do sleep 0.2; done";
    k.ok(&[
        "create",
        "deployment",
        "hello",
        &format!("--image={IMAGE}"),
        "--replicas=2",
        "--port=8080",
        "--",
        "/bin/sh",
        "-c",
        serve,
    ]);
    k.ok(&["rollout", "status", "deployment/hello", "--timeout=90s"]);
    let ports = k.jsonpath(
        &["deployment", "hello"],
        "{.spec.template.spec.containers[0].ports[0].containerPort}",
    );
    assert_eq!(ports, "8080");
    k.ok(&[
        "create",
        "job",
        "once",
        &format!("--image={IMAGE}"),
        "--",
        "/bin/sh",
        "-c",
        "true",
    ]);
    wait(&k, "once", "complete", 60);
    // A Job another controller manages is left alone: no pod, no status.
    let theirs = job("theirs", "  managedBy: example.com/batch", "true");
    k.apply(&theirs);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(pod_count(&k, "theirs"), 0);
    assert_eq!(field(&k, "theirs", "{.status.startTime}"), "");
}
