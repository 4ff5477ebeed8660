//! Lifecycle hooks, native sidecars and container restart rules against containerd,
//! through a real agent: a preStop hook runs before SIGTERM and its time counts against
//! the grace period; postStart holds a container out of Running and its failure kills it;
//! sidecars start first, let a pod complete, and stop last in reverse order; a restart
//! rule restarts on exit code 42 only.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::agent::Agent;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn statuses(p: &Pod) -> Vec<ContainerStatus> {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default()
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn uptime() -> f64 {
    let text = std::fs::read_to_string("/proc/uptime").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// The first number in `file`: a container's `cat /proc/uptime`, on the host's clock.
fn stamp(file: &Path) -> Option<f64> {
    std::fs::read_to_string(file)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

async fn until<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            t0.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn out_volume(out: &Path) -> String {
    format!(
        "  volumes: [{{name: out, hostPath: {{path: {}}}}}]\n",
        out.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_stop_hook_runs_before_sigterm_and_its_time_counts_against_the_grace() {
    let agent = Agent::start("hook-prestop").await;
    let out = agent.out_dir();
    // The hook outlasts the 3 s grace period: it is cut there, SIGTERM follows with the
    // 2 s window Kubernetes gives after a hook, and the container (which only notes the
    // signal) is killed at its end.
    agent.write(
        "stop.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: stop}}
spec:
  terminationGracePeriodSeconds: 3
{vol}  containers:
  - name: app
    image: {IMAGE}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "trap 'cat /proc/uptime >> /out/term' TERM; while true; do sleep 0.1; done"]
    lifecycle:
      preStop: {{exec: {{command: ["sh", "-c", "cat /proc/uptime > /out/prestop; sleep 30"]}}}}
"#,
            vol = out_volume(&out)
        ),
    );
    agent
        .wait_pod("stop", "running", Duration::from_secs(30), |p| {
            phase(p) == "Running"
        })
        .await;
    let t0 = uptime();
    agent.remove("stop.yaml");
    let hook = until("the preStop hook", Duration::from_secs(10), || {
        stamp(&out.join("prestop"))
    })
    .await;
    let term = until("SIGTERM", Duration::from_secs(15), || {
        stamp(&out.join("term"))
    })
    .await;
    common::eventually("the pod gone", Duration::from_secs(20), || async {
        agent.pod("stop").await.is_none().then_some(())
    })
    .await;
    let gone = uptime();
    assert!(
        hook - t0 < 1.5,
        "the hook ran {:.2}s after the delete",
        hook - t0
    );
    assert!(
        (2.5..4.5).contains(&(term - t0)),
        "SIGTERM {:.2}s after the delete: after the hook's 3 s of grace, not after its 30 s",
        term - t0
    );
    assert!(
        gone - term >= 1.5,
        "the 2 s window after SIGTERM: {:.2}s",
        gone - term
    );
    assert!(gone - t0 < 10.0, "gone {:.2}s after the delete", gone - t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_start_holds_a_container_out_of_running_and_its_failure_kills_it() {
    let agent = Agent::start("hook-poststart").await;
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
    command: ["sleep", "3600"]
    lifecycle:
      postStart: {{exec: {{command: ["sh", "-c", "sleep 3"]}}}}
"#
        ),
    );
    // The runtime has it running while its hook runs; the API must not.
    let node = agent.node.clone();
    let rt = common::runtime().await;
    use podvisor_cri::Runtime;
    common::eventually(
        "the container running in the runtime",
        Duration::from_secs(30),
        || async {
            let pods = rt.list_pods().await.ok()?;
            pods.iter()
                .filter(|p| podvisor_cri::labels::owned_by(p, &node))
                .flat_map(|p| &p.containers)
                .any(|c| c.state == podvisor_cri::ContainerState::Running)
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let p = agent.pod("slow").await.expect("its mirror");
    let state = statuses(&p)
        .first()
        .and_then(|c| c.state.clone())
        .unwrap_or_else(|| panic!("{:#?}\n{}", p.status, agent.log_tail(30)));
    let waiting = state
        .waiting
        .expect("waiting while its postStart hook runs");
    assert_eq!(waiting.reason.as_deref(), Some("ContainerCreating"));
    assert_eq!(phase(&p), "Pending");
    agent
        .wait_pod(
            "slow",
            "running once the hook is done",
            Duration::from_secs(15),
            |p| phase(p) == "Running",
        )
        .await;

    agent.write(
        "bad.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: bad}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: {IMAGE}
    command: ["sleep", "3600"]
    lifecycle:
      postStart: {{exec: {{command: ["sh", "-c", "echo no; exit 1"]}}}}
"#
        ),
    );
    let p = agent
        .wait_pod(
            "bad",
            "killed by its failed hook, then restarted",
            Duration::from_secs(60),
            |p| statuses(p).first().is_some_and(|c| c.restart_count >= 1),
        )
        .await;
    let c = &statuses(&p)[0];
    assert!(
        c.last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .is_some(),
        "{c:?}"
    );
    let events = agent
        .api()
        .get("/api/v1/namespaces/default/events")
        .await
        .unwrap();
    assert!(events.contains("FailedPostStartHook"), "{events}");
    assert!(
        !events.contains("echo no"),
        "the hook's words stay out of events"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecars_start_first_let_the_pod_complete_and_stop_last() {
    let agent = Agent::start("sidecar").await;
    let out = agent.out_dir();
    // `logger` must have started (its startup probe) before `setup` runs; `main` runs
    // beside it and finishes; the pod then completes once the sidecar is stopped.
    agent.write(
        "job.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: job}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
{vol}  initContainers:
  - name: logger
    image: {IMAGE}
    restartPolicy: Always
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "echo logger-start >> /out/order; sleep 2; echo logger-up >> /out/order; touch /tmp/up; trap 'echo logger-stop >> /out/order; exit 0' TERM; while true; do sleep 0.1; done"]
    startupProbe: {{exec: {{command: ["cat", "/tmp/up"]}}, periodSeconds: 1, failureThreshold: 30}}
  - name: setup
    image: {IMAGE}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "echo setup >> /out/order"]
  containers:
  - name: main
    image: {IMAGE}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "echo main >> /out/order; sleep 1; echo main-done >> /out/order"]
"#,
            vol = out_volume(&out)
        ),
    );
    let p = agent
        .wait_pod("job", "Succeeded", Duration::from_secs(60), |p| {
            phase(p) == "Succeeded"
        })
        .await;
    assert_eq!(
        lines(&out.join("order")),
        [
            "logger-start",
            "logger-up",
            "setup",
            "main",
            "main-done",
            "logger-stop"
        ]
    );
    let main = &statuses(&p)[0];
    let done = main
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .unwrap();
    assert_eq!(done.exit_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pods_sidecars_stop_after_its_app_in_reverse_order() {
    let agent = Agent::start("sidecar-stop").await;
    let out = agent.out_dir();
    let sidecar = |name: &str| {
        format!(
            r#"  - name: {name}
    image: {IMAGE}
    restartPolicy: Always
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "trap 'echo {name}-stop >> /out/stop; exit 0' TERM; while true; do sleep 0.1; done"]
"#
        )
    };
    agent.write(
        "svc.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: svc}}
spec:
  terminationGracePeriodSeconds: 10
{vol}  initContainers:
{first}{second}  containers:
  - name: main
    image: {IMAGE}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "trap 'echo main-term >> /out/stop; sleep 1; echo main-stop >> /out/stop; exit 0' TERM; while true; do sleep 0.1; done"]
"#,
            vol = out_volume(&out),
            first = sidecar("first"),
            second = sidecar("second"),
        ),
    );
    agent
        .wait_pod("svc", "running", Duration::from_secs(60), |p| {
            phase(p) == "Running"
        })
        .await;
    agent.remove("svc.yaml");
    until("every container stopped", Duration::from_secs(20), || {
        (lines(&out.join("stop")).len() == 4).then_some(())
    })
    .await;
    assert_eq!(
        lines(&out.join("stop")),
        ["main-term", "main-stop", "second-stop", "first-stop"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_rule_restarts_on_exit_code_42_only() {
    let agent = Agent::start("restart-rules").await;
    let out = agent.out_dir();
    agent.write(
        "rules.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: rules}}
spec:
  restartPolicy: Never
{vol}  containers:
  - name: app
    image: {IMAGE}
    restartPolicy: Never
    restartPolicyRules:
    - {{action: Restart, exitCodes: {{operator: In, values: [42]}}}}
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["sh", "-c", "n=$(cat /out/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /out/n; [ $n -eq 1 ] && exit 42; exit 1"]
"#,
            vol = out_volume(&out)
        ),
    );
    // 42 the first time: restarted (after the crash-loop backoff); 1 the second: not.
    let p = agent
        .wait_pod("rules", "Failed", Duration::from_secs(60), |p| {
            phase(p) == "Failed"
        })
        .await;
    let c = &statuses(&p)[0];
    assert_eq!(c.restart_count, 1);
    let exit = c
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .unwrap()
        .exit_code;
    let before = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .unwrap()
        .exit_code;
    assert_eq!((before, exit), (42, 1));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(std::fs::read_to_string(out.join("n")).unwrap().trim(), "2");
}
