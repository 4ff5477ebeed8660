//! The ReplicaSet controller on a real agent against containerd, driven with kubectl: three
//! running pods owned by their ReplicaSet, one deleted and replaced, scaled 3 → 10 → 2 in
//! the deletion order (cost annotations decide), a crash-looping template restarted in
//! place (no create storm), a node that refuses pods (ReplicaFailure, retries with backoff),
//! a bare pod adopted (a static pod's mirror never: its node controls it), orphan and
//! background deletion, and an agent SIGKILLed during a scale-up to 50 that ends with
//! exactly 50.

mod common;

use std::time::{Duration, Instant};

use common::agent::Agent;
use common::kubectl::Kubectl;
use serde_json::Value;

fn rs_yaml(name: &str, replicas: u32, command: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: localhost/podvisor/busybox:test
        command: ["/bin/sh", "-c", "{command}"]
"#
    )
}

const SERVE: &str = "trap 'exit 0' TERM; while true; do sleep 0.2; done";

/// The pods labelled `app=<app>` and not being deleted, as JSON.
fn pods(k: &Kubectl, app: &str) -> Vec<Value> {
    let out = k.ok(&["get", "pods", "-l", &format!("app={app}"), "-o", "json"]);
    let list: Value = serde_json::from_str(&out).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .cloned()
        .collect()
}

fn names(pods: &[Value]) -> Vec<String> {
    let mut n: Vec<String> = pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn running(pods: &[Value]) -> usize {
    pods.iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .count()
}

/// Waits until `check` holds of the pods of `app`, returning them.
async fn wait_pods(
    k: &Kubectl,
    app: &str,
    what: &str,
    limit: Duration,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let t0 = Instant::now();
    loop {
        let p = pods(k, app);
        if check(&p) {
            return p;
        }
        assert!(
            t0.elapsed() < limit,
            "timed out waiting for {what}: {} pods, {} running",
            p.len(),
            running(&p)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_are_kept_replaced_and_scaled_in_the_deletion_order() {
    let agent = Agent::start("rs-scale").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&rs_yaml("web", 3, SERVE));
    let three = wait_pods(&k, "web", "3 running", Duration::from_secs(60), |p| {
        running(p) == 3
    })
    .await;
    for p in &three {
        let owner = &p["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["kind"].as_str(), owner["name"].as_str()),
            (Some("ReplicaSet"), Some("web"))
        );
        assert_eq!(owner["controller"], true);
        assert!(p["metadata"]["name"].as_str().unwrap().starts_with("web-"));
    }
    let victim = names(&three)[0].clone();
    k.ok(&["delete", "pod", &victim, "--wait=false"]);
    wait_pods(&k, "web", "a replacement", Duration::from_secs(60), |p| {
        running(p) == 3 && !names(p).contains(&victim)
    })
    .await;

    k.ok(&["scale", "rs", "web", "--replicas=10"]);
    let ten = wait_pods(&k, "web", "10 running", Duration::from_secs(120), |p| {
        running(p) == 10
    })
    .await;
    // The two with the highest deletion cost are the ones a scale-down keeps.
    let keep: Vec<String> = names(&ten)[3..5].to_vec();
    for name in &keep {
        k.ok(&[
            "annotate",
            "pod",
            name,
            "controller.kubernetes.io/pod-deletion-cost=1000",
        ]);
    }
    k.ok(&["scale", "rs", "web", "--replicas=2"]);
    let two = wait_pods(&k, "web", "2 left", Duration::from_secs(60), |p| {
        p.len() == 2
    })
    .await;
    assert_eq!(
        names(&two),
        keep,
        "the scale-down followed the deletion cost"
    );
    let status = k.jsonpath(&["rs", "web"], "{.status.replicas}/{.status.readyReplicas}");
    assert_eq!(status, "2/2");
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(
        events.contains("SuccessfulCreate") && events.contains("SuccessfulDelete"),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_template_restarts_in_place_and_a_full_node_backs_off() {
    let agent = Agent::start_with("rs-crash", "[allocatable]\npods = 4\n").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&rs_yaml("crash", 2, "echo starting; exit 1"));
    let first = wait_pods(&k, "crash", "two pods", Duration::from_secs(30), |p| {
        p.len() == 2
    })
    .await;
    k.apply(&rs_yaml("full", 4, SERVE));
    tokio::time::sleep(Duration::from_secs(20)).await;
    // The crash loop is the kubelet's to handle: the same two pods, restarted.
    let later = pods(&k, "crash");
    assert_eq!(
        names(&later),
        names(&first),
        "no pod was created to replace a crashing one"
    );
    let restarts: i64 = later
        .iter()
        .map(|p| {
            p["status"]["containerStatuses"][0]["restartCount"]
                .as_i64()
                .unwrap_or(0)
        })
        .sum();
    assert!(restarts >= 2, "restarted in place: {restarts}");
    // Four pods fit the node: the `full` ReplicaSet gets two and fails for the others.
    assert_eq!(pods(&k, "full").len(), 2);
    let reason = k.jsonpath(
        &["rs", "full"],
        "{.status.conditions[?(@.type==\"ReplicaFailure\")].reason}",
    );
    assert_eq!(reason, "FailedCreate");
    let message = k.jsonpath(&["rs", "full"], "{.status.conditions[0].message}");
    assert!(message.contains("OutOfpods"), "{message}");
    // Backoff: 5 ms doubling; 20 s of refusals are about a dozen attempts, not thousands.
    let count = k.jsonpath(
        &[
            "events",
            "--field-selector",
            "involvedObject.name=full,reason=FailedCreate",
        ],
        "{.items[0].count}",
    );
    let count: u64 = count.trim().parse().unwrap_or(0);
    assert!((3..=25).contains(&count), "{count} failed creates in 20 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_pods_mirror_is_never_adopted_its_node_controls_it() {
    let agent = Agent::start("rs-mirror").await;
    let k = Kubectl::for_agent(&agent);
    agent.write(
        "stat.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: stat, labels: {{app: mirrored}}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {{name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, \"{SERVE}\"]}}\n"
        ),
    );
    let mirror = agent.name("stat");
    wait_pods(
        &k,
        "mirrored",
        "the mirror Running",
        Duration::from_secs(60),
        |p| running(p) == 1,
    )
    .await;
    let owner = |field: &str| {
        k.jsonpath(
            &["pod", &mirror],
            &format!("{{.metadata.ownerReferences[0].{field}}}"),
        )
    };
    assert_eq!(
        (owner("kind"), owner("name"), owner("controller")),
        ("Node".to_string(), agent.node.clone(), "true".to_string()),
        "as the kubelet makes a mirror"
    );
    // A ReplicaSet whose selector matches the static pod makes a pod of its own.
    k.apply(&rs_yaml("mirrored", 1, SERVE));
    let two = wait_pods(
        &k,
        "mirrored",
        "the ReplicaSet's own pod",
        Duration::from_secs(60),
        |p| running(p) == 2,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(pods(&k, "mirrored").len(), 2, "{:?}", names(&two));
    assert_eq!(owner("kind"), "Node", "the mirror was not adopted");
    k.ok(&["delete", "rs", "mirrored"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_pods_are_adopted_and_deleting_the_owner_orphans_or_removes_them() {
    let agent = Agent::start("rs-adopt").await;
    let k = Kubectl::for_agent(&agent);
    let bare = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: bare, labels: {{app: adopt}}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {{name: main, image: localhost/podvisor/busybox:test, command: [/bin/sh, -c, \"{SERVE}\"]}}\n"
    );
    k.apply(&bare);
    k.apply(&rs_yaml("adopt", 2, SERVE));
    let two = wait_pods(&k, "adopt", "2 running", Duration::from_secs(60), |p| {
        running(p) == 2
    })
    .await;
    assert!(
        names(&two).contains(&"bare".to_string()),
        "the bare pod counts as one of the two"
    );
    assert_eq!(
        k.jsonpath(&["pod", "bare"], "{.metadata.ownerReferences[0].name}"),
        "adopt"
    );

    k.ok(&["delete", "rs", "adopt", "--cascade=orphan"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let orphans = pods(&k, "adopt");
    assert_eq!(orphans.len(), 2, "orphaned, still running");
    assert!(orphans.iter().all(|p| {
        p["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(|r| r.is_empty())
    }));

    k.apply(&rs_yaml("adopt", 2, SERVE));
    wait_pods(&k, "adopt", "adopted again", Duration::from_secs(30), |p| {
        p.len() == 2
            && p.iter()
                .all(|p| p["metadata"]["ownerReferences"][0]["name"] == "adopt")
    })
    .await;
    assert_eq!(
        names(&pods(&k, "adopt")),
        names(&orphans),
        "the same pods, not new ones"
    );
    k.ok(&["delete", "rs", "adopt"]);
    wait_pods(
        &k,
        "adopt",
        "every pod gone",
        Duration::from_secs(30),
        |p| p.is_empty(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// The 50 creates themselves take milliseconds (the in-process test of the controller
/// crashes it between them); here the SIGKILL lands while the node starts the 50 pods,
/// and the restarted controller must neither lose nor double any.
async fn a_sigkill_during_a_scale_up_to_fifty_ends_with_exactly_fifty() {
    let mut agent = Agent::start("rs-kill").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&rs_yaml("many", 0, SERVE));
    k.ok(&["scale", "rs", "many", "--replicas=50"]);
    let under_way = wait_pods(
        &k,
        "many",
        "the scale-up under way",
        Duration::from_secs(30),
        |p| p.len() >= 5,
    )
    .await;
    assert!(running(&under_way) < 50, "killed before the 50 ran");
    agent.kill9();
    agent.restart().await;
    wait_pods(&k, "many", "50 running", Duration::from_secs(240), |p| {
        running(p) == 50
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let all = k.ok(&["get", "pods", "-l", "app=many", "-o", "name"]);
    assert_eq!(
        all.lines().count(),
        50,
        "exactly 50 pods, none created twice"
    );
    assert_eq!(
        agent.runtime_pods().await.len(),
        50,
        "and 50 in the runtime"
    );
}
