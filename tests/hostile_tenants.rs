//! Hostile tenants and local users (issue 41): each hole a review found, attacked the way
//! a tenant or a local account would (kubectl with an account's token, raw requests, a
//! pod's own manifest, a shell as `nobody`), and shown closed.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::agent::Agent;
use common::kubectl::{Kubectl, Run};
use common::wait_for;

const IMAGE: &str = "localhost/podvisor/busybox:test";

/// kubectl as the bearer of `token`, against the agent's API (no kubeconfig of its own).
struct Tenant {
    server: String,
    ca: String,
    token: String,
}

impl Tenant {
    fn new(k: &Kubectl, agent: &Agent, account: &str) -> Tenant {
        let server = k.ok(&[
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ]);
        Tenant {
            server,
            ca: agent.state_dir().join("pki/ca.crt").display().to_string(),
            token: k.ok(&["create", "token", account]).trim().to_string(),
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        use std::io::Write;
        let mut c = Command::new(common::kubectl::binary());
        c.args(["--kubeconfig=/dev/null", "-n", "default"])
            .arg(format!("--server={}", self.server))
            .arg(format!("--certificate-authority={}", self.ca))
            .arg(format!("--token={}", self.token))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("kubectl runs");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        child.wait_with_output().unwrap().into()
    }
}

/// What the tenant account may do in `default`: manage pods, read what it is given, write
/// bindings; nothing more.
const TENANT: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, create, delete]}
- {apiGroups: [""], resources: ["*/status"], verbs: [get]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create, get, update, patch]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [bind]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{kind: ServiceAccount, name: tenant, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: default}]
---
apiVersion: v1
kind: Secret
metadata: {name: s1}
stringData: {password: hunter2}
"#;

fn refused(r: &Run, words: &str) {
    assert!(
        !r.ok && r.stderr.contains(words),
        "wanted a refusal saying {words:?}:\n{}\n{}",
        r.stdout,
        r.stderr
    );
}

/// Holes 8 and 9: subresources only where Kubernetes serves them.
fn subresources(k: &Kubectl, tenant: &Tenant) {
    k.ok(&["create", "namespace", "barx"]);
    let eviction =
        r#"{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "barx"}}"#;
    let r = k.run_with(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/barx/eviction",
            "-f",
            "-",
        ],
        eviction,
    );
    refused(&r, "NotFound");
    let phase = k.jsonpath(&["namespace", "barx"], "{.status.phase}");
    assert_eq!(
        phase, "Active",
        "an eviction posted to a namespace removed it"
    );
    // `*/status` lets the tenant read statuses, not the Secret behind `secrets/s1/status`.
    let r = tenant.run(
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/secrets/s1/status",
        ],
        None,
    );
    refused(&r, "NotFound");
    assert!(!r.stdout.contains("aHVudGVyMg"), "{}", r.stdout);
    let r = tenant.run(
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt/status",
        ],
        None,
    );
    refused(&r, "NotFound");
}

/// Hole 10: a binding needs `bind` on the very role it names, or the role's rights.
fn bindings(k: &Kubectl, agent: &Agent, tenant: &Tenant) {
    let bind = |name: &str, role: &str| {
        tenant.run(
            &[
                "create",
                "rolebinding",
                name,
                role,
                "--serviceaccount=default:tenant",
            ],
            None,
        )
    };
    // `bind` on roles is not `bind` on clusterroles/cluster-admin.
    refused(
        &bind("grab", "--clusterrole=cluster-admin"),
        "cannot bind resource \"clusterroles\"",
    );
    assert!(
        k.run(&["get", "rolebinding", "grab"])
            .stderr
            .contains("NotFound")
    );
    // Any Role it may bind.
    let r = bind("readers", "--role=pod-reader");
    assert!(r.ok, "{}", r.stderr);
    // Without `bind`, an account hands on only rights it holds: the reader may grant
    // pod-reader (it reads pods), not the tenant's Role (it creates them).
    let reader = Tenant::new(k, agent, "reader");
    let grant = |name: &str, role: &str| {
        reader.run(
            &["create", "rolebinding", name, role, "--user=someone"],
            None,
        )
    };
    let r = grant("hand-on", "--role=pod-reader");
    assert!(r.ok, "{}", r.stderr);
    refused(
        &grant("hand-more", "--role=tenant"),
        "does not hold every permission",
    );
    // Granted `bind` on the view ClusterRole by name: that one only.
    k.apply(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bind-view}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [view], verbs: [bind]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bind-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: bind-view}
subjects: [{kind: ServiceAccount, name: tenant, namespace: default}]
"#,
    );
    let r = bind("viewers", "--clusterrole=view");
    assert!(r.ok, "{}", r.stderr);
    refused(&bind("editors", "--clusterrole=edit"), "\"edit\"");
    // A binding's role never changes: else binding a harmless role and then pointing it
    // at cluster-admin would do.
    let r = tenant.run(
        &[
            "patch",
            "rolebinding",
            "readers",
            "--type=merge",
            "-p",
            r#"{"roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}}"#,
        ],
        None,
    );
    refused(&r, "cannot change roleRef");
}

/// Holes 3, 6 and 7: what a tenant's pod may not say.
fn pods(tenant: &Tenant, debug_port: u16) {
    let probe = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "scan"}},
        "spec": {{"containers": [{{"name": "c", "image": "{IMAGE}",
        "readinessProbe": {{"tcpSocket": {{"host": "127.0.0.1", "port": {debug_port}}}}}}}]}}}}"#
    );
    refused(
        &tenant.run(&["create", "-f", "-"], Some(&probe)),
        "probe or lifecycle host (container \"c\" uses probe or lifecycle host \"127.0.0.1\")",
    );
    let mirror = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "forged",
        "annotations": {{"kubernetes.io/config.mirror": "x/../../../etc"}}}},
        "spec": {{"containers": [{{"name": "c", "image": "{IMAGE}"}}]}}}}"#
    );
    refused(
        &tenant.run(&["create", "-f", "-"], Some(&mirror)),
        "only the node creates mirror pods",
    );
    let setuid = format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "setuid"}},
        "spec": {{"volumes": [{{"name": "s", "secret": {{"secretName": "s1", "defaultMode": 3565}}}},
            {{"name": "p", "projected": {{"sources": [{{"secret": {{"name": "s1", "items": [{{"key": "password", "path": "x", "mode": 2541}}]}}}}]}}}}],
        "containers": [{{"name": "c", "image": "{IMAGE}"}}]}}}}"#
    );
    let r = tenant.run(&["create", "-f", "-"], Some(&setuid));
    refused(
        &r,
        "spec.volumes[0].secret.defaultMode: Invalid value: 3565: must be a number between 0 and 0777 (octal), both inclusive",
    );
    refused(
        &r,
        "spec.volumes[1].projected.sources[0].secret.items[0].mode: Invalid value: 2541",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_stays_within_its_rights_and_its_namespace() {
    let agent = Agent::start("tenants").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(TENANT);
    let tenant = Tenant::new(&k, &agent, "tenant");
    subresources(&k, &tenant);
    bindings(&k, &agent, &tenant);
    let debug_port = agent.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    pods(&tenant, debug_port);
}

/// Runs `sh -c script` as the unprivileged `nobody`: what any local account can do.
fn as_nobody(script: &str) -> Run {
    Command::new("runuser")
        .args(["-u", "nobody", "--", "sh", "-c", script])
        .output()
        .expect("runuser runs")
        .into()
}

/// Hole 5: the state directory, the store and every pod's volumes are root's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_user_reads_no_secret_token_or_store() {
    use std::os::unix::fs::PermissionsExt;
    let mut agent = Agent::start("local-users").await;
    // The test's own directories are open to all, as /tmp is: only the agent's modes
    // stand between a local user and its files.
    // An older podvisor's modes: the agent makes them its own again when it starts.
    agent.terminate();
    for d in [agent.dir.clone(), agent.state_dir()] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    agent.restart().await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&format!(
        r#"
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: hunter2}}
---
apiVersion: v1
kind: Pod
metadata: {{name: app}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{{name: db, secret: {{secretName: db}}}}]
  containers:
  - {{name: c, image: {IMAGE}, command: [sleep, "3600"], volumeMounts: [{{name: db, mountPath: /db}}]}}
"#
    ));
    wait_for("app Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "app"], "{.status.phase}") == "Running"
    })
    .await;
    let state = agent.state_dir();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("pods")), 0o750);
    assert_eq!(mode(&state.join("store.redb")), 0o600);
    // Where the secret and the pod's token are on the host, read as root.
    let uid = k.jsonpath(&["pod", "app"], "{.metadata.uid}");
    let found = Command::new("sh")
        .args([
            "-c",
            &format!(
                "grep -rl hunter2 {}/pods/{uid}/volumes | head -1",
                state.display()
            ),
        ])
        .output()
        .unwrap();
    let secret_file = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(!secret_file.is_empty(), "the secret's file on the host");
    let store = state.join("store.redb");
    for target in [secret_file.as_str(), &store.display().to_string()] {
        let r = as_nobody(&format!("cat '{target}' | grep -c hunter2"));
        assert!(
            !r.ok && r.stdout.trim() != "1",
            "nobody read {target}: {} {}",
            r.stdout,
            r.stderr
        );
        assert!(r.stderr.contains("Permission denied"), "{}", r.stderr);
    }
    // The container itself still reads its secret.
    assert_eq!(
        k.ok(&["exec", "app", "--", "cat", "/db/password"]),
        "hunter2"
    );
}

/// Hole 1: an environment that expands eightfold at each of six levels (a 1.6 KiB spec,
/// 256 MiB of text) fails its container, and the agent holds no more memory for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expansion_bomb_fails_its_container_and_costs_the_agent_nothing() {
    let agent = Agent::start("env-bomb").await;
    let k = Kubectl::for_agent(&agent);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss0 = agent.rss_kib();
    let mut env = format!("  - {{name: L0, value: \"{}\"}}\n", "x".repeat(1024));
    for level in 1..=6 {
        let refs = format!("$(L{})", level - 1).repeat(8);
        env.push_str(&format!("  - {{name: L{level}, value: \"{refs}\"}}\n"));
    }
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: bomb}}\nspec:\n  containers:\n  - name: c\n    image: {IMAGE}\n    command: [sh, -c, 'echo $L6']\n    env:\n{}",
        env.replace("  - ", "    - ")
    );
    k.apply(&yaml);
    k.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: calm}}\nspec:\n  containers:\n  - {{name: c, image: {IMAGE}, command: [sleep, '3600']}}\n"
    ));
    let mut peak = rss0;
    let t0 = Instant::now();
    let mut waiting = String::new();
    while t0.elapsed() < Duration::from_secs(30) {
        peak = peak.max(agent.rss_kib());
        waiting = k.jsonpath(
            &["pod", "bomb"],
            "{.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}",
        );
        let calm = k.jsonpath(&["pod", "calm"], "{.status.phase}");
        if waiting.starts_with("CreateContainerConfigError") && calm == "Running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        waiting.starts_with("CreateContainerConfigError: env L3: expands to more than"),
        "{waiting}"
    );
    // Held while it retries: a few more back-offs.
    for _ in 0..50 {
        peak = peak.max(agent.rss_kib());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("expansion bomb: the agent's RSS {rss0} KiB before, {peak} KiB at most after");
    assert!(
        peak < rss0 + 24 * 1024,
        "the agent grew from {rss0} KiB to {peak} KiB"
    );
}

/// Hole 2: the worst strategic merges a body of the API's size can hold (`$retainKeys`
/// over tens of thousands of labels, `$setElementOrder` and `$deleteFromPrimitiveList`
/// over as many finalizers), sent as dry runs, which any caller allowed to patch may send.
/// Each answers within seconds, and the API keeps answering everyone else meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_patch_stalls_nobody() {
    let agent = Agent::start("patch-cost").await;
    let k = Kubectl::for_agent(&agent);
    let n = 30_000;
    let key = |i: usize| format!("example.com/a-rather-long-key-{i:06}");
    let reversed: Vec<String> = (0..n).rev().map(key).collect();
    let labels: serde_json::Map<String, serde_json::Value> =
        (0..n).map(|i| (key(i), "v".into())).collect();
    let finalizers: Vec<String> = (0..n).map(key).collect();
    let patch_file = |name: &str, body: serde_json::Value| {
        let file = agent.out_dir().join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_vec(&body).unwrap()).unwrap();
        format!("--patch-file={}", file.display())
    };
    for (cm, seed) in [
        (
            "labelled",
            serde_json::json!({"metadata": {"labels": labels}}),
        ),
        (
            "listed",
            serde_json::json!({"metadata": {"finalizers": finalizers}}),
        ),
    ] {
        k.ok(&["create", "configmap", cm]);
        let file = patch_file(&format!("seed-{cm}"), seed);
        k.ok(&["patch", "configmap", cm, "--type=merge", &file]);
    }
    let hostile = [
        (
            "labelled",
            serde_json::json!({"metadata": {"labels": {"$retainKeys": reversed}}}),
        ),
        (
            "listed",
            serde_json::json!({"metadata": {"$setElementOrder/finalizers": reversed}}),
        ),
        (
            "listed",
            serde_json::json!({"metadata": {"$deleteFromPrimitiveList/finalizers": reversed}}),
        ),
    ];
    let api = agent.api();
    for (i, (cm, body)) in hostile.into_iter().enumerate() {
        let file = patch_file(&format!("hostile-{i}"), body);
        let mut patch = k
            .command(&[
                "patch",
                "configmap",
                cm,
                "--dry-run=server",
                "--type=strategic",
                &file,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let mut worst = Duration::ZERO;
        let status = loop {
            if let Some(s) = patch.try_wait().unwrap() {
                break Some(s);
            }
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = patch.kill();
                break None;
            }
            let g0 = Instant::now();
            let got = api
                .get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")
                .await;
            worst = worst.max(g0.elapsed());
            assert!(
                got.is_ok(),
                "a GET behind patch {i} failed after {:?}",
                g0.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let took = t0.elapsed();
        println!("patch {i}: {took:?}, longest GET meanwhile {worst:?}");
        assert!(
            status.is_some_and(|s| s.success()),
            "patch {i} after {took:?}"
        );
        assert!(
            worst < Duration::from_secs(1),
            "a GET waited {worst:?} behind patch {i}"
        );
    }
}
