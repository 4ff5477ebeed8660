//! The Deployment controller on a real agent against containerd, driven with kubectl: a
//! Deployment applied with client-side validation comes up; `kubectl set image` rolls it
//! out without ever having fewer than `replicas - maxUnavailable` ready pods or more than
//! `replicas + maxSurge` (a watch checks after every event); `rollout status`, `history`
//! and `undo`; pause and resume; `rollout restart`; Recreate never overlaps old and new
//! pods; an agent SIGKILLed in the middle of a rollout finishes it with no extra pods;
//! a stuck rollout scaled while paused splits its replicas as kube-controller-manager does
//! on the real control plane, step by step.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::pod_watch::{PodWatch, Pods};

const V1: &str = "localhost/podvisor/busybox:test";
const V2: &str = "localhost/podvisor/busybox:v2";

fn deployment(name: &str, replicas: u32, strategy: &str, ready_after: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  annotations: {{kubernetes.io/change-cause: first}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  strategy: {strategy}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: {V1}
        command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
        readinessProbe:
          exec: {{command: ["true"]}}
          initialDelaySeconds: {ready_after}
          periodSeconds: 1
"#
    )
}

fn rollout_status(k: &Kubectl, name: &str) -> String {
    let target = format!("deployment/{name}");
    k.ok(&["rollout", "status", &target, "--timeout=180s"])
}

fn live(p: &Pods) -> impl Iterator<Item = &common::pod_watch::Seen> {
    p.values().filter(|s| !s.deleting)
}

/// The images of the pods of `app`, sorted, once none is being deleted (a rollout is
/// complete when the old pods are deleting; they stop within their grace period).
async fn images(k: &Kubectl, app: &str) -> Vec<String> {
    for _ in 0..150 {
        let out = k.jsonpath(
            &["pods", "-l", &format!("app={app}")],
            "{range .items[?(@.metadata.deletionTimestamp)]}x{end}|{range .items[*]}{.spec.containers[0].image} {end}",
        );
        let (deleting, all) = out.split_once('|').unwrap();
        if deleting.is_empty() {
            let mut v: Vec<String> = all.split_whitespace().map(String::from).collect();
            v.sort();
            return v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("pods of {app} still being deleted after 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_keeps_its_bounds_and_rolls_back() {
    let agent = Agent::start("deploy-roll").await;
    let k = Kubectl::for_agent(&agent);
    let rolling = "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}";
    let r = k.run_with(
        &["apply", "--validate=true", "-f", "-"],
        &deployment("web", 4, rolling, 0),
    );
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    assert!(rollout_status(&k, "web").contains("successfully rolled out"));
    assert_eq!(images(&k, "web").await, vec![V1; 4]);
    let ready_floor = 3;
    let check = Box::new(move |p: &Pods| {
        let alive = live(p).count();
        let ready = live(p).filter(|s| s.ready).count();
        let started = p.len() >= 4;
        if alive > 5 {
            return Some(format!("{alive} pods alive: {p:?}"));
        }
        (started && ready < ready_floor).then(|| format!("{ready} ready: {p:?}"))
    });
    let watch = PodWatch::start(&k, "app=web", check);
    tokio::time::sleep(Duration::from_secs(2)).await;
    k.ok(&["set", "image", "deployment/web", &format!("main={V2}")]);
    assert!(rollout_status(&k, "web").contains("successfully rolled out"));
    let violations = watch.stop();
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(images(&k, "web").await, vec![V2; 4]);
    let history = k.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    k.ok(&["rollout", "undo", "deployment/web"]);
    rollout_status(&k, "web");
    assert_eq!(images(&k, "web").await, vec![V1; 4]);
    let revision = k.jsonpath(
        &["deployment", "web"],
        "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    );
    assert_eq!(revision, "3", "the rollback is the next revision");
    let sets = k.jsonpath(
        &["rs", "-l", "app=web"],
        "{range .items[*]}{.spec.replicas} {end}",
    );
    let mut sizes: Vec<&str> = sets.split_whitespace().collect();
    sizes.sort();
    let dump = k.ok(&["get", "rs", "-l", "app=web", "-o", "yaml"]);
    assert_eq!(
        sizes,
        ["0", "4"],
        "two ReplicaSets: the old at zero\n{dump}"
    );
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(events.contains("ScalingReplicaSet"), "{events}");
    let table = k.ok(&["get", "deployment", "web"]);
    assert!(table.contains("4/4"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_restart_scale_and_recreate_without_overlap() {
    let agent = Agent::start("deploy-recreate").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&deployment("db", 2, "{type: Recreate}", 0));
    rollout_status(&k, "db");
    k.ok(&["rollout", "pause", "deployment/db"]);
    k.ok(&["set", "image", "deployment/db", &format!("main={V2}")]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        images(&k, "db").await,
        vec![V1; 2],
        "paused: nothing rolled out"
    );
    // Recreate's promise, as the deployment controller keeps it (recreate.go's
    // oldPodsRunning): no new pod while an old one may run; an old pod that finished
    // (Succeeded or Failed) does not count, even while its deletion is under way.
    let overlap = Box::new(|p: &Pods| {
        let mut hashes: Vec<&str> = p
            .values()
            .filter(|s| !matches!(s.phase.as_str(), "Succeeded" | "Failed"))
            .map(|s| s.template_hash.as_str())
            .collect();
        hashes.dedup();
        (hashes.len() > 1).then(|| format!("old and new pods at once: {p:?}"))
    });
    let watch = PodWatch::start(&k, "app=db", overlap);
    tokio::time::sleep(Duration::from_secs(1)).await;
    k.ok(&["rollout", "resume", "deployment/db"]);
    rollout_status(&k, "db");
    let violations = watch.stop();
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(images(&k, "db").await, vec![V2; 2]);

    let before = k.jsonpath(&["pods", "-l", "app=db"], "{.items[*].metadata.name}");
    k.ok(&["rollout", "restart", "deployment/db"]);
    rollout_status(&k, "db");
    let after = k.jsonpath(&["pods", "-l", "app=db"], "{.items[*].metadata.name}");
    assert!(
        before.split(' ').all(|n| !after.contains(n)),
        "{before} / {after}"
    );
    k.ok(&["scale", "deployment/db", "--replicas=3"]);
    rollout_status(&k, "db");
    assert_eq!(images(&k, "db").await.len(), 3);

    k.ok(&["delete", "deployment", "db"]);
    let mut left = String::new();
    for _ in 0..150 {
        left = k.ok(&["get", "rs,pods", "-l", "app=db", "-o", "name"]);
        if left.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        left.trim().is_empty(),
        "the ReplicaSets and pods go with it: {left}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_interrupted_by_sigkill_finishes_after_restart_with_no_extra_pods() {
    let mut agent = Agent::start("deploy-kill").await;
    let k = Kubectl::for_agent(&agent);
    let surge_one = "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}";
    k.apply(&deployment("api", 6, surge_one, 2));
    rollout_status(&k, "api");
    k.ok(&["set", "image", "deployment/api", &format!("main={V2}")]);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mid = k.jsonpath(
        &["rs", "-l", "app=api"],
        "{range .items[*]}{.spec.replicas} {end}",
    );
    agent.kill9();
    agent.restart().await;
    let k = Kubectl::for_agent(&agent);
    let bound = Box::new(|p: &Pods| {
        let alive = live(p).count();
        (alive > 7).then(|| format!("{alive} pods alive: {p:?}"))
    });
    let watch = PodWatch::start(&k, "app=api", bound);
    assert!(
        rollout_status(&k, "api").contains("successfully rolled out"),
        "from {mid}"
    );
    assert!(watch.stop().is_empty());
    assert_eq!(images(&k, "api").await, vec![V2; 6]);
    let sets = k.jsonpath(
        &["rs", "-l", "app=api"],
        "{range .items[*]}{.spec.replicas} {end}",
    );
    let mut sizes: Vec<&str> = sets.split_whitespace().collect();
    sizes.sort();
    assert_eq!(sizes, ["0", "6"], "mid-rollout it was {mid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_stops_and_removes_everything_in_it() {
    use podvisor_cri::Runtime;
    let agent = Agent::start("deploy-ns").await;
    let k = Kubectl::for_agent(&agent);
    k.ok(&["create", "namespace", "team"]);
    let d = deployment("app", 2, "{type: RollingUpdate}", 0);
    let r = k.run_with(&["apply", "-n", "team", "-f", "-"], &d);
    assert!(r.ok, "{}", r.stderr);
    k.ok(&[
        "rollout",
        "status",
        "-n",
        "team",
        "deployment/app",
        "--timeout=90s",
    ]);
    k.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=b",
    ]);
    // A pod that ignores SIGTERM holds the namespace for its grace period.
    let stubborn = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: stubborn, namespace: team}}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n  - {{name: main, image: {V1}, command: [/bin/sh, -c, \"trap '' TERM; sleep 3600\"]}}\n"
    );
    k.apply(&stubborn);
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "-n",
        "team",
        "pod/stubborn",
        "--timeout=60s",
    ]);
    k.ok(&["delete", "namespace", "team", "--wait=false"]);
    let phase = k.jsonpath(&["namespace", "team"], "{.status.phase}");
    assert_eq!(phase, "Terminating");
    let refused = k.run(&["create", "configmap", "late", "-n", "team"]);
    assert!(
        !refused.ok && refused.stderr.contains("because it is being terminated"),
        "{}",
        refused.stderr
    );
    k.ok(&["wait", "--for=delete", "namespace/team", "--timeout=60s"]);
    let left = k.ok(&[
        "get",
        "pods,rs,deployments,configmaps,serviceaccounts",
        "-n",
        "team",
        "-o",
        "name",
    ]);
    assert!(left.trim().is_empty(), "{left}");
    let rt = common::runtime().await;
    let running: Vec<_> = rt
        .list_pods()
        .await
        .unwrap()
        .into_iter()
        .filter(|p| {
            p.pod.namespace == "team"
                && p.containers
                    .iter()
                    .any(|c| c.state == podvisor_cri::ContainerState::Running)
        })
        .collect();
    assert!(running.is_empty(), "containers still run: {running:?}");
    k.ok(&["create", "namespace", "team"]);
    assert_eq!(
        k.jsonpath(&["namespace", "team"], "{.status.phase}"),
        "Active"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_and_validation_read_the_served_schemas() {
    let agent = Agent::start("deploy-explain").await;
    let k = Kubectl::for_agent(&agent);
    let strategy = k.ok(&["explain", "deployment.spec.strategy"]);
    assert!(
        strategy.contains("GROUP:      apps") && strategy.contains("rollingUpdate"),
        "{strategy}"
    );
    assert!(strategy.contains("DeploymentStrategy"), "{strategy}");
    let backoff = k.ok(&["explain", "job.spec.backoffLimit"]);
    assert!(
        backoff.contains("<integer>") && backoff.contains("retries"),
        "{backoff}"
    );
    let image = k.ok(&["explain", "pods.spec.containers.image"]);
    assert!(image.contains("Container image name"), "{image}");
    let v2: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/openapi/v2"])).unwrap();
    assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
    let typo = deployment("typo", 1, "{type: Recreate}", 0).replace("replicas: 1", "replica: 1");
    let r = k.run_with(&["apply", "-f", "-"], &typo);
    assert!(
        !r.ok && r.stderr.contains("unknown field \"spec.replica\""),
        "{}",
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_tracks_managers_and_refuses_conflicts() {
    let agent = Agent::start("deploy-ssa").await;
    let k = Kubectl::for_agent(&agent);
    let yaml = deployment("ssa", 2, "{type: Recreate}", 0);
    for _ in 0..2 {
        let r = k.run_with(&["apply", "--server-side", "-f", "-"], &yaml);
        assert!(
            r.ok && r.stdout.contains("serverside-applied"),
            "{}{}",
            r.stdout,
            r.stderr
        );
    }
    k.ok(&["rollout", "status", "deployment/ssa", "--timeout=90s"]);
    let managers = k.jsonpath(
        &["deployment", "ssa"],
        "{range .metadata.managedFields[*]}{.manager}:{.operation} {end}",
    );
    // The Deployment controller's revision annotation is its own (as
    // kube-controller-manager's is in a cluster).
    assert!(managers.contains("kubectl:Apply"), "{managers}");
    let theirs = yaml.replace("replicas: 2", "replicas: 3");
    let r = k.run_with(
        &["apply", "--server-side", "--field-manager=ops", "-f", "-"],
        &theirs,
    );
    assert!(!r.ok, "a conflicting manager is refused");
    assert!(
        r.stderr.contains("conflict with \"kubectl\"") && r.stderr.contains(".spec.replicas"),
        "{}",
        r.stderr
    );
    assert_eq!(k.jsonpath(&["deployment", "ssa"], "{.spec.replicas}"), "2");
    let r = k.run_with(
        &[
            "apply",
            "--server-side",
            "--field-manager=ops",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &theirs,
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(k.jsonpath(&["deployment", "ssa"], "{.spec.replicas}"), "3");
    // Applying replicas: 2 again is now a conflict with ops; kubectl yields the field by
    // leaving it out, and the annotation, which ops applied too, stays.
    let r = k.run_with(&["apply", "--server-side", "-f", "-"], &yaml);
    assert!(
        !r.ok && r.stderr.contains("conflict with \"ops\""),
        "{}",
        r.stderr
    );
    let fewer = yaml
        .replace(
            "annotations: {kubernetes.io/change-cause: first}",
            "annotations: {}",
        )
        .replace("  replicas: 2\n", "");
    let r = k.run_with(&["apply", "--server-side", "-f", "-"], &fewer);
    assert!(r.ok, "{}", r.stderr);
    let cause = k.jsonpath(
        &["deployment", "ssa"],
        "{.metadata.annotations.kubernetes\\.io/change-cause}",
    );
    assert_eq!(
        cause, "first",
        "ops applied the annotation too, so it stays"
    );
    assert_eq!(
        k.jsonpath(&["deployment", "ssa"], "{.spec.replicas}"),
        "3",
        "ops owns replicas now"
    );
}

/// A Deployment whose pods can never become available (nothing serves `localhost:1`): its
/// ReplicaSets are sized by the Deployment controller alone.
fn unavailable(name: &str, tag: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 10
  selector: {{matchLabels: {{app: {name}}}}}
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 3, maxUnavailable: 2}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 0
      automountServiceAccountToken: false
      containers: [{{name: main, image: "localhost:1/podvisor/absent:{tag}"}}]
"#
    )
}

/// kubectl in one namespace.
struct In<'a>(&'a Kubectl, &'a str);

impl In<'_> {
    fn ok(&self, args: &[&str]) -> String {
        self.0.ok(&[args, &["-n", self.1]].concat())
    }

    /// The ReplicaSets' sizes by image tag (`v1=8 v2=5`), with whether the Deployment's
    /// status has seen its latest spec.
    fn sizes(&self, app: &str) -> (String, bool) {
        let sizes = self.ok(&["get", "rs", "-l", &format!("app={app}"), "-o", "jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}={.spec.replicas} {end}"]);
        let mut sizes: Vec<&str> = sizes
            .split_whitespace()
            .map(|s| s.rsplit(':').next().unwrap())
            .collect();
        sizes.sort_unstable();
        let seen = self.ok(&[
            "get",
            "deployment",
            app,
            "-o",
            "jsonpath={.metadata.generation}={.status.observedGeneration}",
        ]);
        let (generation, observed) = seen.split_once('=').unwrap();
        (sizes.join(" "), generation == observed)
    }
}

/// The sizes every side's ReplicaSets agree on once each has seen its latest spec and
/// none has changed for 2 s (within 60 s, or the test fails naming each side's).
async fn agreed(sides: &[In<'_>], app: &str) -> String {
    let (mut last, mut same) = (Vec::new(), 0);
    for _ in 0..120 {
        let now: Vec<(String, bool)> = sides.iter().map(|s| s.sizes(app)).collect();
        let settled = now.iter().all(|(sizes, seen)| *seen && *sizes == now[0].0);
        same = if settled && now == last { same + 1 } else { 0 };
        if same == 4 {
            return now[0].0.clone();
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("podvisor's and kube-controller-manager's ReplicaSets of {app} never agreed: {last:?}");
}

/// Kubernetes' proportional scaling, side by side with kube-controller-manager on the
/// same steps: a rollout stuck with no pod available, paused, then scaled up and down. The
/// ReplicaSets must come to the sizes the real controller gives them at every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_a_stuck_rollout_splits_replicas_as_kube_controller_manager_does() {
    let agent = Agent::start("deploy-proportion").await;
    let standalone = Kubectl::for_agent(&agent);
    let admin = common::cluster::admin();
    let ns = format!("proportion-{}", std::process::id());
    admin.ok(&["create", "namespace", &ns]);
    let sides = [In(&standalone, "default"), In(&admin, &ns)];
    let steps: [&[&str]; 4] = [
        &[
            "set",
            "image",
            "deployment/split",
            "main=localhost:1/podvisor/absent:v2",
        ],
        &["scale", "deployment/split", "--replicas=15"],
        &["scale", "deployment/split", "--replicas=7"],
        &["scale", "deployment/split", "--replicas=11"],
    ];
    for side in &sides {
        let applied = side.0.run_with(
            &["apply", "-n", side.1, "-f", "-"],
            &unavailable("split", "v1"),
        );
        assert!(applied.ok, "{}", applied.stderr);
    }
    assert_eq!(agreed(&sides, "split").await, "v1=10");
    let mut seen = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        for side in &sides {
            side.ok(step);
        }
        seen.push(agreed(&sides, "split").await);
        if i == 0 {
            for side in &sides {
                side.ok(&["rollout", "pause", "deployment/split"]);
            }
        }
    }
    admin.ok(&["delete", "namespace", &ns, "--wait=false"]);
    // What both gave, to show the steps did split: Kubernetes' documented example, 8 old
    // and 5 new at 10 replicas becoming 11 and 7 at 15.
    assert_eq!(&seen[..2], ["v1=8 v2=5", "v1=11 v2=7"], "{seen:?}");
}

/// Server-side dry runs change nothing, the scale subresource and evictions included, and
/// answer with the object's own version (so `kubectl diff` shows only what would change);
/// a `dryRun` other than `All` is refused, never taken as a real write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_change_nothing_and_only_all_is_one() {
    let agent = Agent::start("deploy-dry-run").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&deployment("dry", 1, "{type: RollingUpdate}", 0));
    rollout_status(&k, "dry");
    let replicas = || k.jsonpath(&["deployment", "dry"], "{.spec.replicas}");

    k.ok(&[
        "scale",
        "deployment/dry",
        "--replicas=3",
        "--dry-run=server",
    ]);
    let r = k.run(&[
        "patch",
        "deployment/dry",
        "--subresource=scale",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
        "--dry-run=server",
    ]);
    assert!(r.ok, "{}", r.stderr);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(replicas(), "1", "a dry-run scale scaled");

    let live = k.ok(&["get", "deployment", "dry", "-o", "yaml"]);
    let diff = k.run_with(
        &["diff", "-f", "-"],
        &live.replace("replicas: 1\n", "replicas: 2\n"),
    );
    assert!(diff.stdout.contains("+  replicas: 2"), "{}", diff.stdout);
    let changed = |l: &&str| l.starts_with(['+', '-']) && l.contains("resourceVersion:");
    assert!(
        !diff.stdout.lines().any(|l| changed(&l)),
        "a dry run answers with the live version:\n{}",
        diff.stdout
    );

    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wet"}}"#;
    let r = k.run_with(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/configmaps?dryRun=true",
            "-f",
            "-",
        ],
        cm,
    );
    assert!(
        !r.ok && r.stderr.contains("Unsupported value"),
        "{}",
        r.stderr
    );
    assert!(!k.run(&["get", "configmap", "wet"]).ok, "dryRun=true wrote");

    let pod = k.jsonpath(&["pods", "-l", "app=dry"], "{.items[0].metadata.name}");
    let eviction =
        format!(r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}"}}}}"#);
    let path = format!("/api/v1/namespaces/default/pods/{pod}/eviction?dryRun=All");
    let r = k.run_with(&["create", "--raw", &path, "-f", "-"], &eviction);
    assert!(r.ok, "{}", r.stderr);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        k.jsonpath(&["pod", &pod], "{.metadata.deletionTimestamp}")
            .is_empty(),
        "a dry-run eviction evicted"
    );
    k.ok(&["delete", "deployment", "dry"]);
}
