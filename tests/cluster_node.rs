//! podvisor as a node of a real cluster (kube-apiserver, kube-controller-manager and
//! kube-scheduler built from Kubernetes' module by `scripts/cluster-up`), driven with
//! kubectl as the cluster's admin: it joins with a bootstrap token, registers a Ready
//! Node, keeps its Lease, runs what the scheduler binds to it, and keeps its pods through
//! a partition from the control plane and an agent restart during it.

mod common;

use std::time::Duration;

use common::cluster::Proxy;
use common::eventually;
use common::kubectl::Kubectl;
use common::nodes::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_runs_on_the_node_and_scales_down_gracefully() {
    let agent = join("cn-deploy", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    let version = admin.jsonpath(&["node", &node], "{.status.nodeInfo.kubeletVersion}");
    assert!(!version.is_empty(), "the node reports the agent's version");

    admin.apply(&deployment(&ns, &node, 3));
    running(&admin, &ns, &node, 3).await;
    // The node's own API is a view of the same pods.
    let local =
        Kubectl::for_agent(&agent).jsonpath(&["pods", "-n", &ns], "{.items[*].status.phase}");
    assert_eq!(local, "Running Running Running");
    // ... and only a view: a pod is made through the cluster.
    let own = Kubectl::for_agent(&agent).run_with(&["apply", "-f", "-"], &pod(&ns, "local", &node));
    assert!(
        !own.ok && own.stderr.contains("ClusterOwned"),
        "{}",
        own.stderr
    );

    let lease = ["lease", "-n", "kube-node-lease", &node];
    let renewed = admin.jsonpath(&lease, "{.spec.renewTime}");
    assert_eq!(admin.jsonpath(&lease, "{.spec.holderIdentity}"), node);
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_ne!(
        admin.jsonpath(&lease, "{.spec.renewTime}"),
        renewed,
        "the lease is renewed"
    );

    // The agent acts as the node and needs no more: its credentials cannot read a secret
    // no pod of the node uses, nor write another Node.
    let as_node = Kubectl::with(agent.state_dir().join("cluster").join("kubelet.kubeconfig"));
    admin.ok(&[
        "create",
        "secret",
        "generic",
        "unrelated",
        "-n",
        &ns,
        "--from-literal=k=v",
    ]);
    let read = as_node.run(&["get", "secret", "unrelated", "-n", &ns]);
    assert!(
        !read.ok && read.stderr.contains("Forbidden"),
        "{}",
        read.stderr
    );
    let other = format!("other-{node}");
    admin.apply(&format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {other}}}\n"
    ));
    let patch = as_node.run(&["label", "node", &other, "x=y"]);
    admin.ok(&["delete", "node", &other]);
    assert!(
        !patch.ok && patch.stderr.contains("Forbidden"),
        "{}",
        patch.stderr
    );

    // Scaling down deletes two pods with a 30 s grace: they stop on SIGTERM, so they are
    // gone from the cluster long before the grace would have run out.
    let t0 = std::time::Instant::now();
    admin.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=1"]);
    running(&admin, &ns, &node, 1).await;
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    drop(cleanup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_on_through_a_partition_and_an_agent_restart_during_it() {
    let proxy = Proxy::start().await;
    let mut agent = join("cn-part", Some(&proxy.server())).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&pod(&ns, "steady", &node));
    admin.apply(&pod(&ns, "doomed", &node));
    running(&admin, &ns, &node, 2).await;
    let id_path = "{.status.containerStatuses[0].containerID}";
    let steady_id = admin.jsonpath(&["pod", "steady", "-n", &ns], id_path);
    assert!(steady_id.starts_with("containerd://"), "{steady_id}");

    // Cut off: the agent dies and comes back without the cluster, and adopts its pods
    // from its own store; meanwhile the cluster deletes one of them.
    proxy.cut();
    agent.kill9();
    admin.ok(&["delete", "pod", "doomed", "-n", &ns, "--wait=false"]);
    agent.restart().await;
    assert_eq!(
        running_containers(&agent).await,
        2,
        "both pods still run while cut off"
    );
    let local = Kubectl::for_agent(&agent);
    let phases = local.jsonpath(&["pods", "-n", &ns], "{.items[*].status.phase}");
    assert_eq!(phases, "Running Running", "the node's API still has both");

    // Back: the deleted pod is stopped and removed, the other was never restarted.
    proxy.restore();
    running(&admin, &ns, &node, 1).await;
    eventually("the deleted pod's sandbox stopped", MINUTE, || async {
        (running_containers(&agent).await == 1).then_some(())
    })
    .await;
    assert_eq!(
        admin.jsonpath(&["pod", "steady", "-n", &ns], id_path),
        steady_id
    );
    let restarts = "{.status.containerStatuses[0].restartCount}";
    assert_eq!(admin.jsonpath(&["pod", "steady", "-n", &ns], restarts), "0");
    drop(cleanup);
}

/// A pod bound to `node` by hand (no scheduler to keep it off), with `extra` in its spec.
fn bound_by_hand(ns: &str, name: &str, node: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  {extra}
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    resources: {{requests: {{cpu: '{cpu}'}}}}
",
        cpu = if name == "huge" { "1000" } else { "10m" }
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_the_node_cannot_take_are_failed_with_the_kubelet_s_reasons() {
    let agent = join("cn-admit", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&bound_by_hand(&ns, "huge", &node, ""));
    admin.apply(&bound_by_hand(
        &ns,
        "elsewhere",
        &node,
        "nodeSelector: {disk: hdd}",
    ));
    // A field podvisor cannot honour is refused, never run without.
    let volume = "volumes: [{name: v, nfs: {server: nfs.invalid, path: /}}]";
    admin.apply(&bound_by_hand(&ns, "unsupported", &node, volume));
    // What the kubelet's own admit handlers refuse, with their reasons.
    let sysctl = "securityContext: {sysctls: [{name: kernel.msgmax, value: '10000000000'}]}";
    admin.apply(&bound_by_hand(&ns, "sysctl", &node, sysctl));
    admin.apply(&bound_by_hand(&ns, "windows", &node, "os: {name: windows}"));
    // A field 1.35's types lacked (1.37's alpha emptyDir mode, its gate on in
    // scripts/cluster-up): it reaches the node and is refused by name, not dropped.
    let newer = "volumes: [{name: v, emptyDir: {mode: 493}}]";
    admin.apply(&bound_by_hand(&ns, "newer", &node, newer));
    let path = "{.status.phase} {.status.reason}";
    for (pod, want) in [
        ("huge", "Failed OutOfcpu"),
        ("elsewhere", "Failed NodeAffinity"),
        ("unsupported", "Failed UnsupportedPodSpec"),
        ("sysctl", "Failed SysctlForbidden"),
        ("windows", "Failed PodOSNotSupported"),
        ("newer", "Failed UnsupportedPodSpec"),
    ] {
        let what = format!("{pod} Failed by the node");
        let got = eventually(&what, MINUTE, || async {
            let s = admin.jsonpath(&["pod", pod, "-n", &ns], path);
            s.starts_with("Failed").then_some(s)
        })
        .await;
        assert_eq!(got, want, "{pod}");
    }
    let message = admin.jsonpath(&["pod", "newer", "-n", &ns], "{.status.message}");
    assert!(
        message.contains("spec.volumes[0].emptyDir.mode"),
        "{message}"
    );
    assert_eq!(running_containers(&agent).await, 0);
    drop(cleanup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_pod_s_mirror_is_in_the_cluster_and_comes_back_when_deleted() {
    let agent = join("cn-static", None).await;
    let (admin, cleanup) = setup(&agent);
    let node = agent.node.clone();
    node_ready(&admin, &node).await;
    agent.write(
        "static.yaml",
        "apiVersion: v1
kind: Pod
metadata: {name: sentinel, namespace: kube-system}
spec:
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    command: [sh, -c, \"trap 'exit 0' TERM; sleep 86400 & wait\"]
",
    );
    let name = format!("sentinel-{node}");
    let mirror = ["pod", &name, "-n", "kube-system"];
    let path =
        r#"{.metadata.uid} {.status.phase} {.metadata.annotations.kubernetes\.io/config\.mirror}"#;
    let first = eventually("the mirror Running in the cluster", MINUTE, || async {
        let s = admin.jsonpath(&mirror, path);
        let f: Vec<String> = s.split(' ').map(str::to_string).collect();
        (f.len() == 3 && f[1] == "Running" && !f[2].is_empty()).then_some(f)
    })
    .await;
    admin.ok(&["delete", "pod", &name, "-n", "kube-system", "--wait=false"]);
    eventually("the mirror made again", MINUTE, || async {
        let s = admin.jsonpath(&mirror, path);
        let f: Vec<&str> = s.split(' ').collect();
        (f.len() == 3 && f[0] != first[0] && f[1] == "Running" && f[2] == first[2]).then_some(())
    })
    .await;
    assert_eq!(
        running_containers(&agent).await,
        1,
        "the static pod never stopped"
    );
    drop(cleanup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_execute_taint_on_the_cluster_s_node_evicts_what_does_not_tolerate_it() {
    let agent = join("cn-taint", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&tolerating(&ns, "plain", &node, "", None));
    admin.apply(&tolerating(&ns, "tolerant", &node, "maintenance", None));
    running(&admin, &ns, &node, 2).await;
    // The controller manager's taint eviction is off (scripts/test): podvisor's acts.
    admin.ok(&["taint", "node", &node, "maintenance=now:NoExecute"]);
    eventually("the intolerant pod evicted and gone", MINUTE, || async {
        (names(&admin, &ns) == ["tolerant"]).then_some(())
    })
    .await;
    running(&admin, &ns, &node, 1).await;
    assert_eq!(running_containers(&agent).await, 1);
    drop(cleanup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_rotates_its_client_certificate_and_keeps_working() {
    // A 10-minute certificate (the API's least), renewed after 1 % of it: about 6 s.
    let section = format!(
        "[cluster]\nkubeconfig = \"{}\"\ncertificate_lifetime = \"10m\"\nrotate_after = 0.01\n",
        common::cluster::bootstrap_kubeconfig().display()
    );
    let agent = common::agent::Agent::start_with("cn-rotate", &section).await;
    let (admin, cleanup) = setup(&agent);
    let node = agent.node.clone();
    node_ready(&admin, &node).await;
    let pem = agent.state_dir().join("cluster").join("kubelet-client.pem");
    let first = std::fs::read(&pem).unwrap();
    let user = format!("system:node:{node}");
    let csrs = r#"{range .items[*]}{.spec.username} {.status.conditions[0].type}{"\n"}{end}"#;
    eventually(
        "a second certificate, issued by the cluster",
        MINUTE,
        || async {
            let approved = admin.jsonpath(&["csr"], csrs);
            let mine = approved
                .lines()
                .filter(|l| *l == format!("{user} Approved"))
                .count();
            (mine >= 1 && std::fs::read(&pem).unwrap() != first).then_some(())
        },
    )
    .await;
    // Still the node, with the new credentials: its Lease keeps being renewed.
    let lease = ["lease", "-n", "kube-node-lease", &node];
    let renewed = admin.jsonpath(&lease, "{.spec.renewTime}");
    eventually(
        "the lease renewed after the rotation",
        Duration::from_secs(30),
        || async { (admin.jsonpath(&lease, "{.spec.renewTime}") != renewed).then_some(()) },
    )
    .await;
    node_ready(&admin, &node).await;
    drop(cleanup);
}

const READER: &str = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NS}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: NS}
stringData: {PASSWORD: hunter2}
---
apiVersion: v1
kind: Pod
metadata: {name: reader, namespace: NS}
spec:
  nodeSelector: {kubernetes.io/hostname: NODE}
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: conf, configMap: {name: settings}}
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    imagePullPolicy: Never
    env:
    - {name: PW, valueFrom: {secretKeyRef: {name: creds, key: PASSWORD}}}
    volumeMounts: [{name: conf, mountPath: /etc/conf}]
    command: ["/bin/sh", "-c"]
    args:
    - |
      sa=/var/run/secrets/kubernetes.io/serviceaccount
      echo "token parts $(tr '.' ' ' < $sa/token | wc -w)"
      echo "ca $(head -n 1 $sa/ca.crt)"
      echo "namespace $(cat $sa/namespace)"
      echo "greeting $(cat /etc/conf/greeting) PW=$PW"
      echo "api $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
      sleep 3600
"#;

/// The token file of the pod's service-account volume, read on the node.
fn token_on_node(agent: &common::agent::Agent, uid: &str) -> String {
    let projected = agent
        .state_dir()
        .join("pods")
        .join(uid)
        .join("volumes")
        .join("kubernetes.io~projected");
    let volume = std::fs::read_dir(&projected)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("kube-api-access-")
        })
        .expect("the service-account volume");
    std::fs::read_to_string(volume.path().join("token")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_pod_runs_with_its_token_and_the_cluster_s_configmaps_and_secrets() {
    let agent = join("cn-objects", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&READER.replace("NS", &ns).replace("NODE", &node));
    running(&admin, &ns, &node, 1).await;
    let local = Kubectl::for_agent(&agent);
    let logs = eventually("the reader's lines", MINUTE, || async {
        let out = local.run(&["logs", "reader", "-n", &ns]).stdout;
        out.contains("api ").then_some(out)
    })
    .await;
    assert!(logs.contains("token parts 3"), "{logs}");
    assert!(logs.contains("ca -----BEGIN CERTIFICATE-----"), "{logs}");
    assert!(logs.contains(&format!("namespace {ns}")), "{logs}");
    assert!(logs.contains("greeting hello PW=hunter2"), "{logs}");
    // In-cluster clients find the API server by the `kubernetes` Service's variables.
    let ip = admin.jsonpath(
        &["service", "kubernetes", "-n", "default"],
        "{.spec.clusterIP}",
    );
    let port = admin.jsonpath(
        &["service", "kubernetes", "-n", "default"],
        "{.spec.ports[0].port}",
    );
    assert!(!ip.is_empty());
    assert!(logs.contains(&format!("api {ip}:{port}\n")), "{logs}");

    // The token is the pod's: the cluster authenticates it as the namespace's default
    // account, bound to this pod.
    let uid = admin.jsonpath(&["pod", "reader", "-n", &ns], "{.metadata.uid}");
    let token = token_on_node(&agent, &uid);
    let as_pod = Kubectl::with(token_kubeconfig(&agent.out_dir(), &token));
    let who = as_pod.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.extra.authentication\\.kubernetes\\.io/pod-name}"]);
    assert_eq!(
        who,
        format!("system:serviceaccount:{ns}:default [\"reader\"]")
    );
    drop(cleanup);
}

/// Containers of the pod `uid` running in containerd now.
async fn running_of(agent: &common::agent::Agent, uid: &str) -> usize {
    let pods = agent.runtime_pods().await;
    let containers = pods.iter().filter(|p| p.pod.uid == uid);
    containers
        .flat_map(|p| &p.containers)
        .filter(|c| c.state == podvisor_cri::ContainerState::Running)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_scales_takes_a_force_delete_and_is_cordoned_and_drained_with_kubectl() {
    let agent = join("cn-drain", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&deployment(&ns, &node, 3));
    running(&admin, &ns, &node, 3).await;
    admin.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=10"]);
    running(&admin, &ns, &node, 10).await;

    // A force delete removes the object at once; the node stops the pod when it hears.
    let victim = names(&admin, &ns)[0].clone();
    let uid = admin.jsonpath(&["pod", &victim, "-n", &ns], "{.metadata.uid}");
    assert_eq!(running_of(&agent, &uid).await, 1);
    let force = ["--grace-period=0", "--force"];
    admin.ok(&[&["delete", "pod", &victim, "-n", &ns][..], &force].concat());
    eventually(
        "the force-deleted pod stopped on the node",
        MINUTE,
        || async { (running_of(&agent, &uid).await == 0).then_some(()) },
    )
    .await;
    running(&admin, &ns, &node, 10).await;
    admin.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=1"]);
    running(&admin, &ns, &node, 1).await;
    eventually("nine pods' containers stopped", MINUTE, || async {
        (running_containers(&agent).await == 1).then_some(())
    })
    .await;

    // Cordoned, the node takes no new pod; drained, its pod is evicted (gracefully, through
    // the Eviction API) and its replacement waits for a node.
    admin.ok(&["cordon", &node]);
    let unschedulable = admin.jsonpath(&["node", &node], "{.spec.unschedulable}");
    assert_eq!(unschedulable, "true");
    admin.ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=2"]);
    eventually("the new pod Pending with no node", MINUTE, || async {
        let p = pods(&admin, &ns);
        (p.len() == 2 && p.iter().any(|l| l.ends_with(" Pending "))).then_some(())
    })
    .await;
    let drain = ["drain", &node, "--ignore-daemonsets", "--timeout=60s"];
    admin.ok(&drain);
    let p = pods(&admin, &ns);
    assert!(p.iter().all(|l| l.ends_with(" Pending ")), "{p:?}");
    assert_eq!(running_containers(&agent).await, 0);
    admin.ok(&["uncordon", &node]);
    running(&admin, &ns, &node, 2).await;
    drop(cleanup);
}

/// In a cluster the node reads a pod's pull Secret as itself (the Node authorizer allows
/// the Secrets its pods name) and pulls with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_pulls_with_the_cluster_s_pull_secret() {
    use common::registry::{self, Registry};
    let registry = Registry::start("cluster").await;
    let image = registry.push("private/busybox", "1");
    let agent = join("cn-pull", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.ok(&[
        "create",
        "secret",
        "docker-registry",
        "regcred",
        "-n",
        &ns,
        &format!("--docker-server=localhost:{}", registry.port),
        &format!("--docker-username={}", registry::USER),
        &format!("--docker-password={}", registry::PASSWORD),
    ]);
    admin.apply(&format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: private, namespace: {ns}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  imagePullSecrets: [{{name: regcred}}]
  terminationGracePeriodSeconds: 0
  containers:
  - {{name: c, image: \"{image}\", imagePullPolicy: Always, command: [sleep, \"3600\"]}}
"
    ));
    running(&admin, &ns, &node, 1).await;
    drop(cleanup);
}

fn sized_pod(ns: &str, node: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: sized, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    command: [sleep, '3600']
    lifecycle: {{preStop: {{sleep: {{seconds: 3}}}}}}
    resources: {{requests: {{cpu: 10m}}, limits: {{cpu: 100m}}}}
"
    )
}

/// `kubectl patch --subresource resize` on the cluster's pod: the node sees the new spec,
/// changes the running container's CPU limit in place, and reports it (kube-apiserver
/// refuses to resize a pod whose running containers report no resources). Then a graceful
/// delete through a preStop sleep: the pod leaves the cluster once the node has stopped it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_is_resized_in_place_and_deleted_gracefully_through_the_cluster() {
    let agent = join("cn-resize", None).await;
    let (admin, cleanup) = setup(&agent);
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    admin.apply(&sized_pod(&ns, &node));
    let ready = "{.status.containerStatuses[0].ready}";
    eventually("sized Ready", MINUTE, || async {
        (admin.jsonpath(&["pod", "sized", "-n", &ns], ready) == "true").then_some(())
    })
    .await;
    let patch = r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"200m"}}}]}}"#;
    admin.ok(&[
        "patch",
        "pod",
        "sized",
        "-n",
        &ns,
        "--subresource",
        "resize",
        "-p",
        patch,
    ]);
    let path = "{.status.containerStatuses[0].resources.limits.cpu} \
                {.status.containerStatuses[0].restartCount} {.status.observedGeneration} \
                {.status.conditions[*].type}";
    let seen = eventually("the new CPU limit reported", MINUTE, || async {
        let s = admin.jsonpath(&["pod", "sized", "-n", &ns], path);
        (s.starts_with("200m ") && !s.contains("PodResize")).then_some(s)
    })
    .await;
    assert!(
        seen.starts_with("200m 0 2 "),
        "in place, generation 2: {seen}"
    );
    let v1_or_v2 = "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || \
                    cut -d' ' -f1 /sys/fs/cgroup/cpu.max";
    let quota = admin.ok(&["exec", "sized", "-n", &ns, "--", "sh", "-c", v1_or_v2]);
    assert_eq!(quota.trim(), "20000");

    let t0 = std::time::Instant::now();
    admin.ok(&["delete", "pod", "sized", "-n", &ns, "--wait=false"]);
    eventually("the deleted pod gone from the cluster", MINUTE, || async {
        pods(&admin, &ns).is_empty().then_some(())
    })
    .await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(3),
        "the preStop sleep ran: {took:?}"
    );
    drop(cleanup);
}
