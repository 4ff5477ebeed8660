//! The taint eviction scheduler and node-fit admission on a real agent against containerd,
//! driven with kubectl: NoExecute taints evict on time (counted from the taint's
//! `timeAdded`, across an agent SIGKILL too), with SIGTERM first; a deadline follows a
//! toleration change; a removed taint evicts nothing; forever-tolerating and static pods
//! stay; untolerating pods, a cordon and capacity refuse new pods; drain empties the node.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::agent::Agent;
use common::kubectl::Kubectl;

/// Seconds since the epoch, with the fraction.
fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A pod that writes when it got SIGTERM, tolerating `gpu:NoExecute` for `seconds`
/// (`-` for forever, empty for not at all).
fn pod(name: &str, out: &std::path::Path, seconds: &str) -> String {
    let toleration = match seconds {
        "" => String::new(),
        "-" => "{key: gpu, operator: Exists, effect: NoExecute}".into(),
        s => format!("{{key: gpu, operator: Exists, effect: NoExecute, tolerationSeconds: {s}}}"),
    };
    pod_with(name, out, &toleration)
}

fn pod_with(name: &str, out: &std::path::Path, tolerations: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 5
  tolerations: [{tolerations}]
  volumes: [{{name: out, hostPath: {{path: {out}}}}}]
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    volumeMounts: [{{name: out, mountPath: /out}}]
    command: ["/bin/sh", "-c", "trap 'touch /out/{name}.term; exit 0' TERM; while true; do sleep 0.1; done"]
"#,
        out = out.display()
    )
}

/// The time (s since the epoch) the node's taint `key` was added, as the store stamped it.
fn taint_added(k: &Kubectl, node: &str, key: &str) -> f64 {
    let at = k.jsonpath(
        &["node", node],
        &format!("{{.spec.taints[?(@.key==\"{key}\")].timeAdded}}"),
    );
    let t: k8s_openapi::jiff::Timestamp = at.trim().parse().expect("timeAdded is set");
    t.as_millisecond() as f64 / 1000.0
}

/// When a pod was marked for deletion, as far as polling through kubectl can tell: after
/// `after` (when the last look that saw it unmarked began; -inf if the first look saw it
/// marked) and before `before` (when the look that saw it marked ended). A loaded machine
/// makes each look slow; the mark is somewhere in between, not at the end.
struct Mark {
    after: f64,
    before: f64,
}

impl Mark {
    /// Whether the mark can have been within `slack` seconds of `t`.
    fn near(&self, t: f64, slack: f64) -> bool {
        self.after <= t + slack && self.before >= t - slack
    }

    fn show(&self, since: f64) -> String {
        format!(
            "between {:.1} and {:.1} s",
            self.after - since,
            self.before - since
        )
    }
}

/// Polls until pod `name` is marked for deletion (or gone).
async fn marked_at(k: &Kubectl, name: &str, limit: Duration) -> Option<Mark> {
    let t0 = Instant::now();
    let mut after = f64::NEG_INFINITY;
    while t0.elapsed() < limit {
        let began = now_s();
        let r = k.run(&[
            "get",
            "pod",
            name,
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        if !r.ok || !r.stdout.trim().is_empty() {
            return Some(Mark {
                after,
                before: now_s(),
            });
        }
        after = began;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

async fn running(k: &Kubectl, names: &[&str]) {
    let t0 = Instant::now();
    for n in names {
        while k.jsonpath(&["pod", n], "{.status.phase}") != "Running" {
            assert!(t0.elapsed() < Duration::from_secs(60), "{n} never ran");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn gone_with_term(agent: &Agent, k: &Kubectl, name: &str) -> bool {
    let term = agent.out_dir().join(format!("{name}.term")).exists();
    term && !k.run(&["get", "pod", name]).ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_execute_taints_evict_on_time_and_follow_toleration_changes() {
    let agent = Agent::start("taint-times").await;
    let k = Kubectl::for_agent(&agent).privileged();
    let out = agent.out_dir();
    for (name, secs) in [
        ("t30", "30"),
        ("t60to10", "60"),
        ("forever", "-"),
        ("plain", ""),
    ] {
        k.apply(&pod(name, &out, secs));
    }
    let static_pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: stat}\nspec:\n  containers:\n  - {name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, 'while true; do sleep 1; done']}\n";
    agent.write("stat.yaml", static_pod);
    let stat = agent.name("stat");
    running(&k, &["t30", "t60to10", "forever", "plain", &stat]).await;

    k.ok(&["taint", "nodes", &agent.node, "gpu=yes:NoExecute"]);
    let added = taint_added(&k, &agent.node, "gpu");
    let plain = marked_at(&k, "plain", Duration::from_secs(5)).await;
    assert!(
        plain.as_ref().is_some_and(|m| m.after < added + 2.0),
        "untolerated: at once, not {}",
        plain.map_or("never".into(), |m| m.show(added))
    );
    // At 5 s the 60 s toleration becomes 10 s: due 10 s after the taint.
    tokio::time::sleep(Duration::from_secs_f64((added + 5.0 - now_s()).max(0.0))).await;
    let patch = r#"{"spec":{"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoExecute","tolerationSeconds":10}]}}"#;
    k.ok(&["patch", "pod", "t60to10", "-p", patch]);
    let at = marked_at(&k, "t60to10", Duration::from_secs(20))
        .await
        .expect("evicted");
    assert!(
        at.near(added + 10.0, 1.0),
        "t60to10 evicted {} after the taint",
        at.show(added)
    );
    let at = marked_at(&k, "t30", Duration::from_secs(40))
        .await
        .expect("evicted");
    assert!(
        at.near(added + 30.0, 1.0),
        "t30 evicted {} after the taint",
        at.show(added)
    );
    common::eventually(
        "t30 gone after SIGTERM",
        Duration::from_secs(15),
        || async { gone_with_term(&agent, &k, "t30").then_some(()) },
    )
    .await;
    let yaml = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=t30",
        "-o",
        "yaml",
    ]);
    assert!(
        yaml.contains("Marking for deletion Pod default/t30"),
        "{yaml}"
    );

    // Forever stays; so does the static pod (it tolerates every NoExecute taint, as the
    // kubelet makes static pods do, and is never evicted anyway).
    assert_eq!(
        k.jsonpath(&["pod", "forever"], "{.status.phase}"),
        "Running"
    );
    assert_eq!(k.jsonpath(&["pod", &stat], "{.status.phase}"), "Running");
    let about = k.ok(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={stat}"),
    ]);
    assert!(!about.contains("TaintManagerEviction"), "{about}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taint_removed_in_time_evicts_nothing_while_another_stays() {
    let agent = Agent::start("taint-removed").await;
    let k = Kubectl::for_agent(&agent).privileged();
    let out = agent.out_dir();
    // `kept` counts down on `gpu` and tolerates `flaky` for ever.
    let kept = "{key: gpu, operator: Exists, effect: NoExecute, tolerationSeconds: 30}, {key: flaky, operator: Exists, effect: NoExecute}";
    k.apply(&pod_with("kept", &out, kept));
    running(&k, &["kept"]).await;
    k.ok(&["taint", "nodes", &agent.node, "gpu=yes:NoExecute"]);
    k.ok(&["taint", "nodes", &agent.node, "flaky=1:NoExecute"]);
    let gpu = taint_added(&k, &agent.node, "gpu");
    tokio::time::sleep(Duration::from_secs_f64((gpu + 15.0 - now_s()).max(0.0))).await;
    // At 15 s `gpu` goes while `flaky` stays (kubernetes#90794): the countdown is cancelled
    // by the running scheduler, with no restart to recompute it.
    k.ok(&["taint", "nodes", &agent.node, "gpu-"]);
    tokio::time::sleep(Duration::from_secs_f64((gpu + 33.0 - now_s()).max(0.0))).await;
    assert_eq!(
        k.jsonpath(&["pod", "kept"], "{.status.phase}"),
        "Running",
        "{}",
        agent.log_tail(30)
    );
    assert!(
        k.jsonpath(&["pod", "kept"], "{.metadata.deletionTimestamp}")
            .is_empty()
    );
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=kept",
    ]);
    assert!(
        events.contains("Cancelling deletion of Pod default/kept"),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_sigkilled_mid_countdown_evicts_on_the_original_deadline() {
    let mut agent = Agent::start("taint-restart").await;
    let k = Kubectl::for_agent(&agent).privileged();
    let out = agent.out_dir();
    k.apply(&pod("restarted", &out, "30"));
    running(&k, &["restarted"]).await;
    k.ok(&["taint", "nodes", &agent.node, "gpu=yes:NoExecute"]);
    let gpu = taint_added(&k, &agent.node, "gpu");
    tokio::time::sleep(Duration::from_secs_f64((gpu + 15.0 - now_s()).max(0.0))).await;
    agent.kill9();
    agent.restart().await;
    let at = marked_at(&k, "restarted", Duration::from_secs(40))
        .await
        .expect("evicted");
    assert!(
        at.near(gpu + 30.0, 1.0),
        "evicted {} after its taint: the countdown must not restart with the agent",
        at.show(gpu)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taints_and_cordon_refuse_new_pods_and_drain_empties_the_node() {
    let agent = Agent::start("taint-admit").await;
    let k = Kubectl::for_agent(&agent).privileged();
    let out = agent.out_dir();
    k.apply(&pod("early", &out, "-"));
    running(&k, &["early"]).await;
    k.ok(&["taint", "nodes", &agent.node, "gpu=yes:NoExecute"]);
    let r = k.run_with(&["apply", "-f", "-"], &pod("late", &out, ""));
    assert!(
        !r.ok && r.stderr.contains("TaintToleration") && r.stderr.contains("Forbidden"),
        "{}",
        r.stderr
    );
    k.apply(&pod("tolerant", &out, "-"));
    k.ok(&["taint", "nodes", &agent.node, "gpu-"]);

    k.ok(&["cordon", &agent.node]);
    let r = k.run_with(&["apply", "-f", "-"], &pod("refused", &out, ""));
    assert!(
        !r.ok && r.stderr.contains("NodeUnschedulable"),
        "{}",
        r.stderr
    );
    k.ok(&["uncordon", &agent.node]);
    k.apply(&pod("admitted", &out, ""));
    running(&k, &["tolerant", "admitted"]).await;

    let static_pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: stat}\nspec:\n  containers:\n  - {name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, 'while true; do sleep 1; done']}\n";
    agent.write("stat.yaml", static_pod);
    let stat = agent.name("stat");
    running(&k, &[&stat]).await;
    let r = k.run(&[
        "drain",
        &agent.node,
        "--force",
        "--timeout=60s",
        "--delete-emptydir-data",
    ]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    let left = k.ok(&["get", "pods", "-o", "name"]);
    assert_eq!(
        left.trim(),
        format!("pod/{stat}"),
        "only the static pod's mirror stays"
    );
    assert!(k.jsonpath(&["node", &agent.node], "{.spec.unschedulable}") == "true");
    for name in ["early", "tolerant", "admitted"] {
        assert!(
            out.join(format!("{name}.term")).exists(),
            "{name} got SIGTERM"
        );
    }
}
