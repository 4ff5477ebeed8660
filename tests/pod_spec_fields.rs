//! The rest of a real pod spec, honoured as the kubelet honours it, against a real agent
//! and containerd, driven by kubectl: `dnsPolicy` and `dnsConfig` (and the node's cluster
//! DNS for `ClusterFirst`), `hostAliases`, `hostname` and `subdomain` in the pod's
//! `/etc/hosts` and hostname, and the termination message from the file or, with
//! `FallbackToLogsOnError`, from the log; and each QoS class's `oom_score_adj` and pod cgroup
//! (under the class's parent, with the pod's limits; gone with the pod); a pod past its
//! emptyDir `sizeLimit` evicted.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const NAMES: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: names}
spec:
  terminationGracePeriodSeconds: 1
  hostname: db
  subdomain: sts
  setHostnameAsFQDN: true
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [a.example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  hostAliases:
  - {ip: 192.0.2.9, hostnames: [foo.local, bar.local]}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "cat /etc/resolv.conf /etc/hosts; echo hostname $(hostname); echo done; sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: cluster-first}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "cat /etc/resolv.conf; echo done; sleep 3600"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_hosts_and_hostname_are_as_the_spec_and_the_node_say() {
    let node = "[node]\ncluster_dns = [\"10.96.0.10\"]\ncluster_domain = \"example.internal\"\n";
    let agent = Agent::start_with("pod-fields-dns", node).await;
    let k = Kubectl::for_agent(&agent);
    k.apply(NAMES);
    let logs = |pod: &str| k.run(&["logs", pod]).stdout;
    wait_for("both pods' output", Duration::from_secs(60), || {
        logs("names").contains("done") && logs("cluster-first").contains("done")
    })
    .await;
    let out = logs("names");
    assert!(out.contains("nameserver 192.0.2.53\n"), "{out}");
    assert!(!out.contains("nameserver 10.96.0.10"), "{out}");
    assert!(out.contains("search a.example\n"), "{out}");
    assert!(out.contains("options ndots:2 edns0\n"), "{out}");
    assert!(out.contains("# Kubernetes-managed hosts file.\n"), "{out}");
    let ip = k.jsonpath(&["pod", "names"], "{.status.podIP}");
    let fqdn = "db.sts.default.svc.example.internal";
    assert!(out.contains(&format!("{ip}\t{fqdn}\tdb\n")), "{out}");
    assert!(out.contains("192.0.2.9\tfoo.local\tbar.local\n"), "{out}");
    assert!(out.contains(&format!("hostname {fqdn}\n")), "{out}");

    let out = logs("cluster-first");
    assert!(out.contains("nameserver 10.96.0.10\n"), "{out}");
    assert!(
        out.contains("search default.svc.example.internal svc.example.internal example.internal"),
        "{out}"
    );
    assert!(out.contains("options ndots:5"), "{out}");
    k.ok(&["delete", "pods", "--all", "--wait=true"]);
}

const ENDINGS: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: endings}
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "echo -n 'disk full' > /dev/termination-log; exit 3"]
  - name: custom
    image: localhost/podvisor/busybox:test
    terminationMessagePath: /tmp/why
    command: ["/bin/sh", "-c", "echo -n 'my own path' > /tmp/why"]
  - name: fallback
    image: localhost/podvisor/busybox:test
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["/bin/sh", "-c", "echo starting >&2; echo 'cannot connect' >&2; exit 1"]
  - name: quiet
    image: localhost/podvisor/busybox:test
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["/bin/sh", "-c", "echo fine"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn termination_messages_come_from_the_file_or_the_log_of_a_failure() {
    let agent = Agent::start("pod-fields-end").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(ENDINGS);
    wait_for("endings Failed", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "endings"], "{.status.phase}") == "Failed"
    })
    .await;
    let message = |c: &str| {
        let path =
            format!("{{.status.containerStatuses[?(@.name==\"{c}\")].state.terminated.message}}");
        k.jsonpath(&["pod", "endings"], &path)
    };
    assert_eq!(message("file"), "disk full");
    assert_eq!(message("custom"), "my own path");
    // One stream: the runtime orders lines within a stream, not across stdout and stderr.
    assert_eq!(message("fallback"), "starting\ncannot connect\n");
    assert_eq!(
        message("quiet"),
        "",
        "a success gets no message from its log"
    );
    k.ok(&["delete", "pod", "endings", "--wait=true"]);
}

/// Upstream's "termination message from log output if TerminationMessagePolicy
/// FallbackToLogsOnError is set": `echo -n DONE` is logged as a partial line, which is the
/// whole message (it was dropped, for an empty one), from the first Failed status on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failures_unterminated_last_line_is_its_message_from_the_first_report() {
    let agent = Agent::start("pod-fields-done").await;
    let k = Kubectl::for_agent(&agent);
    let names: Vec<String> = (0..6).map(|i| format!("done-{i}")).collect();
    for name in &names {
        k.apply(&format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["/bin/sh", "-c", "echo -n DONE; /bin/false"]
"#
        ));
    }
    let path = "{.status.phase}|{.status.containerStatuses[0].state.terminated.message}";
    let mut first = std::collections::BTreeMap::new();
    wait_for("every pod Failed", Duration::from_secs(60), || {
        for name in &names {
            if !first.contains_key(name) {
                let seen = k.jsonpath(&["pod", name], path);
                if seen.starts_with("Failed|") {
                    first.insert(name.clone(), seen);
                }
            }
        }
        first.len() == names.len()
    })
    .await;
    for (name, seen) in &first {
        assert_eq!(seen, "Failed|DONE", "{name}'s first Failed status");
    }
    k.ok(&["delete", "pods", "--all", "--wait=true"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_past_its_active_deadline_is_failed_and_stopped() {
    let agent = Agent::start("pod-fields-deadline").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(
        r#"apiVersion: v1
kind: Pod
metadata: {name: bounded}
spec:
  activeDeadlineSeconds: 4
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: localhost/podvisor/busybox:test, command: ["/bin/sh", "-c", "sleep 3600"]}
"#,
    );
    wait_for("bounded Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "bounded"], "{.status.phase}") == "Running"
    })
    .await;
    let t0 = std::time::Instant::now();
    let path = "{.status.phase} {.status.reason}";
    wait_for("bounded Failed", Duration::from_secs(30), || {
        k.jsonpath(&["pod", "bounded"], path) == "Failed DeadlineExceeded"
    })
    .await;
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let state = "{.status.containerStatuses[0].state.terminated.reason}";
    wait_for("its container stopped", Duration::from_secs(30), || {
        !k.jsonpath(&["pod", "bounded"], state).is_empty()
    })
    .await;
    // It stays Failed: nothing restarts it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        k.jsonpath(&["pod", "bounded"], path),
        "Failed DeadlineExceeded"
    );
    k.ok(&["delete", "pod", "bounded", "--wait=true"]);
}

fn qos_pod(name: &str, resources: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "echo adj $(cat /proc/self/oom_score_adj) cg $(grep :memory: /proc/self/cgroup | cut -d: -f3); sleep 3600"]
    resources: {resources}
"#
    )
}

/// The machine's memory, bytes, as the agent reads it.
fn mem_total() -> i64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib = m.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    kib.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<i64>()
        .unwrap()
        * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_qos_class_gets_the_kubelet_s_oom_score_adj_and_its_cgroup_parent() {
    let agent = Agent::start("pod-fields-oom").await;
    let k = Kubectl::for_agent(&agent);
    let limits = "{limits: {cpu: 100m, memory: 64Mi}}";
    let request = "{requests: {memory: 1Gi}}";
    let pods = [
        qos_pod("guaranteed", limits),
        qos_pod("burstable", request),
        qos_pod("besteffort", "{}"),
    ];
    k.apply(&pods.join("---\n"));
    let burstable = (1000 - 1000 * (1i64 << 30) / mem_total()).clamp(3, 999);
    // The scripts' containerd restricts scores to no lower than its own (these machines
    // lack CAP_SYS_RESOURCE; ../shared/CONTAINERD.md), as it would a kubelet's -997.
    let own = format!("/proc/{}/oom_score_adj", common::containerd::pid());
    let floor: i64 = std::fs::read_to_string(own)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let expected = [
        (
            "guaranteed",
            "Guaranteed",
            (-997i64).max(floor),
            "/kubepods",
        ),
        ("burstable", "Burstable", burstable, "/kubepods/burstable"),
        ("besteffort", "BestEffort", 1000, "/kubepods/besteffort"),
    ];
    let v1 = !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    for (pod, class, adj, parent) in expected {
        wait_for(&format!("{pod}'s output"), Duration::from_secs(60), || {
            k.run(&["logs", pod]).stdout.contains("adj ")
        })
        .await;
        let out = k.run(&["logs", pod]).stdout;
        let uid = k.jsonpath(&["pod", pod], "{.metadata.uid}");
        let mut words = out.split_whitespace();
        assert_eq!(words.nth(1), Some(adj.to_string().as_str()), "{pod}: {out}");
        assert_eq!(k.jsonpath(&["pod", pod], "{.status.qosClass}"), class);
        // On cgroup v1 (no cgroup namespace) the container sees its host path: under its
        // pod's cgroup, under its class's parent.
        if v1 {
            let cg = words.nth(1).unwrap_or_default();
            assert!(
                cg.starts_with(&format!("{parent}/pod{uid}/")),
                "{pod}: {out}"
            );
        }
    }
    if v1 {
        pod_cgroups_have_the_pods_limits(&k).await;
    } else {
        eprintln!(
            "cgroup v2: pod-level limits are not written (docs/configuration.md); checked the placement only"
        );
    }
}

/// What the kubelet writes on each pod's cgroup (v1), then the cgroups gone with the pods.
async fn pod_cgroups_have_the_pods_limits(k: &Kubectl) {
    let read = |path: String| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{path}"))
            .unwrap()
            .trim()
            .to_string()
    };
    let uid = |pod: &str| k.jsonpath(&["pod", pod], "{.metadata.uid}");
    let g = uid("guaranteed");
    assert_eq!(
        read(format!("memory/kubepods/pod{g}/memory.limit_in_bytes")),
        (64i64 << 20).to_string()
    );
    assert_eq!(
        read(format!("cpu/kubepods/pod{g}/cpu.cfs_quota_us")),
        "10000"
    );
    assert_eq!(read(format!("cpu/kubepods/pod{g}/cpu.shares")), "102");
    let b = uid("burstable");
    assert_eq!(
        read(format!("cpu/kubepods/burstable/pod{b}/cpu.cfs_quota_us")),
        "-1"
    );
    assert_eq!(
        read(format!("cpu/kubepods/burstable/pod{b}/cpu.shares")),
        "2"
    );
    let e = uid("besteffort");
    assert_eq!(
        read(format!("cpu/kubepods/besteffort/pod{e}/cpu.shares")),
        "2"
    );
    assert_eq!(read("cpu/kubepods/besteffort/cpu.shares".into()), "2");
    k.ok(&[
        "delete",
        "pod",
        "guaranteed",
        "burstable",
        "besteffort",
        "--wait=true",
    ]);
    for dir in [
        format!("memory/kubepods/pod{g}"),
        format!("cpu/kubepods/burstable/pod{b}"),
        format!("pids/kubepods/besteffort/pod{e}"),
    ] {
        let path = format!("/sys/fs/cgroup/{dir}");
        wait_for(&format!("{path} removed"), Duration::from_secs(20), || {
            !std::path::Path::new(&path).exists()
        })
        .await;
    }
}

/// Whether a container of the pod `uid` runs in the runtime.
async fn runs(agent: &Agent, uid: &str) -> bool {
    let pods = agent.runtime_pods().await;
    pods.iter().any(|p| {
        p.pod.uid == uid
            && p.containers
                .iter()
                .any(|c| c.state == podvisor_cri::ContainerState::Running)
    })
}

fn filler(name: &str, kib: u32) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {{name: scratch, emptyDir: {{sizeLimit: 1Mi}}}}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/bin/sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1024 count={kib} && sync && echo filled && sleep 3600"]
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_past_its_empty_dir_size_limit_is_evicted_and_one_within_it_runs_on() {
    let mut agent = Agent::start("pod-fields-evict").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&[filler("hog", 2048), filler("modest", 256)].join("---\n"));
    wait_for("the hog evicted", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "hog"], "{.status.reason}") == "Evicted"
    })
    .await;
    assert_eq!(k.jsonpath(&["pod", "hog"], "{.status.phase}"), "Failed");
    assert_eq!(
        k.jsonpath(&["pod", "hog"], "{.status.message}"),
        "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\". "
    );
    let disruption = k.jsonpath(
        &["pod", "hog"],
        "{.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
    );
    assert_eq!(disruption, "TerminationByKubelet");
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=hog",
    ]);
    assert!(events.contains("Evicted"), "{events}");
    // Stopped, and not run again: no container of it runs in the runtime.
    let uid = k.jsonpath(&["pod", "hog"], "{.metadata.uid}");
    wait_for(
        "the hog's containers stopped",
        Duration::from_secs(20),
        || {
            let state = k.jsonpath(&["pod", "hog"], "{.status.containerStatuses[0].state}");
            state.contains("terminated")
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!runs(&agent, &uid).await, "the evicted pod runs again");
    // Nor after the agent's restart: the stored status says it finished.
    agent.kill9();
    agent.restart().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !runs(&agent, &uid).await,
        "the evicted pod runs again after a restart"
    );
    assert_eq!(k.jsonpath(&["pod", "hog"], "{.status.reason}"), "Evicted");
    // Within its limit, the other runs on.
    wait_for("modest filled", Duration::from_secs(30), || {
        k.run(&["logs", "modest"]).stdout.contains("filled")
    })
    .await;
    assert_eq!(k.jsonpath(&["pod", "modest"], "{.status.phase}"), "Running");
}

/// The hierarchies a pod's cgroup is in: v1's this test looks at, or v2's one tree.
fn hierarchies() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    ["memory", "cpu", "pids"].map(|h| root.join(h)).to_vec()
}

fn gone_everywhere(dir: &str) -> bool {
    hierarchies().iter().all(|h| !h.join(dir).exists())
}

/// A pod's cgroup goes with it even when the agent missed its end: an orphan (its manifest
/// removed while the agent was down) is removed with its cgroup after the restart, and a
/// pod cgroup nobody knows, untouched for over a minute (a pod whose sandbox someone else
/// removed), goes at the next housekeeping; one made a moment ago stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_cgroups_nobody_knows_are_removed() {
    let pid = std::process::id();
    let stale = format!("kubepods/besteffort/podsweep-stale-{pid}");
    let fresh = format!("kubepods/burstable/podsweep-fresh-{pid}");
    for h in hierarchies() {
        std::fs::create_dir_all(h.join(&stale).join("c1")).unwrap();
        std::fs::create_dir_all(h.join(&fresh)).unwrap();
        let dir = std::fs::File::open(h.join(&stale)).unwrap();
        let ago = std::time::SystemTime::now() - Duration::from_secs(300);
        dir.set_modified(ago).unwrap();
    }
    let mut agent = Agent::start("pod-fields-cgroups").await;
    agent.write("orphan.yaml", &qos_pod("orphan", "{}"));
    wait_for("the stale cgroup removed", Duration::from_secs(20), || {
        gone_everywhere(&stale)
    })
    .await;
    agent
        .wait_pod("orphan", "Running", Duration::from_secs(60), |p| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .await;
    let uid = agent
        .static_uid("orphan")
        .await
        .expect("the mirror names its pod");
    let own = format!("kubepods/besteffort/pod{uid}");
    assert!(!gone_everywhere(&own), "the running pod has no cgroup");
    assert!(!gone_everywhere(&fresh), "a fresh cgroup was removed");
    agent.kill9();
    agent.remove("orphan.yaml");
    agent.restart().await;
    wait_for(
        "the orphan and its cgroup removed",
        Duration::from_secs(60),
        || gone_everywhere(&own),
    )
    .await;
    assert!(!runs(&agent, &uid).await, "the orphan runs on");
    assert!(!gone_everywhere(&fresh), "a fresh cgroup was removed");
    for h in hierarchies() {
        let _ = std::fs::remove_dir(h.join(&fresh));
    }
}
