//! Real pod specs against a real agent and containerd, driven by kubectl: ConfigMap, Secret
//! and downward API volumes and environment seen from inside the container, a ConfigMap
//! change reaching a mounted file (and not a subPath mount), secrets on a tmpfs, a
//! missing key holding the container in CreateContainerConfigError until it exists.
//! (Service-account tokens: tests/service_accounts.rs.)

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const OBJECTS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  MODE: fast
  greeting.txt: hello
  bad key: skipped
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {PASSWORD: hunter2}
"#;

const READER: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: reader, labels: {app: reader, tier: back}}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: conf
    configMap:
      name: settings
      items: [{key: greeting.txt, path: sub/greeting.txt, mode: 0600}]
  - name: pinned
    configMap: {name: settings}
  - name: creds
    secret: {secretName: creds, defaultMode: 0400}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: mem, resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    resources: {limits: {memory: 64Mi}}
    envFrom: [{configMapRef: {name: settings}, prefix: CM_}]
    env:
    - {name: PW, valueFrom: {secretKeyRef: {name: creds, key: PASSWORD}}}
    - {name: GREETING, value: "$(CM_MODE)-mode"}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    volumeMounts:
    - {name: conf, mountPath: /etc/conf}
    - {name: pinned, mountPath: /etc/pinned.txt, subPath: greeting.txt}
    - {name: creds, mountPath: /etc/creds}
    - {name: info, mountPath: /etc/info}
    command: ["/bin/sh", "-c"]
    args:
    - |
      echo "env CM_MODE=$CM_MODE PW=$PW GREETING=$GREETING TIER=$TIER"
      echo "secret $(cat /etc/creds/PASSWORD) mem $(cat /etc/info/mem)"
      echo "labels $(cat /etc/info/labels | tr '\n' ' ')"
      touch /etc/conf/new 2>/dev/null && echo "conf writable" || echo "conf read-only"
      while true; do echo "greeting $(cat /etc/conf/sub/greeting.txt) pinned $(cat /etc/pinned.txt)"; sleep 1; done
"#;

/// The host directory of the reader's volume `name` of kind `plugin`.
fn volume_dir(agent: &Agent, k: &Kubectl, plugin: &str, name: &str) -> std::path::PathBuf {
    let uid = k.jsonpath(&["pod", "reader"], "{.metadata.uid}");
    agent
        .state_dir()
        .join("pods")
        .join(uid)
        .join("volumes")
        .join(format!("kubernetes.io~{plugin}"))
        .join(name)
}

fn fs_type(path: &std::path::Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    mounts
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.get(1).map(std::path::Path::new) == Some(path))
        .map(|f| f[2].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmaps_secrets_and_the_downward_api_reach_the_container_and_updates_follow() {
    let agent = Agent::start_configured("pod-objects", "resync_interval = \"2s\"\n", "").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(OBJECTS);
    k.apply(READER);
    wait_for("reader Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "reader"], "{.status.phase}") == "Running"
    })
    .await;
    let logs = || k.run(&["logs", "reader"]).stdout;
    wait_for("the reader's first lines", Duration::from_secs(20), || {
        logs().contains("greeting ")
    })
    .await;
    let out = logs();
    assert!(
        out.contains("env CM_MODE=fast PW=hunter2 GREETING=fast-mode TIER=back"),
        "{out}"
    );
    assert!(out.contains("secret hunter2 mem 64"), "{out}");
    assert!(out.contains("labels app=\"reader\" tier=\"back\""), "{out}");
    assert!(out.contains("conf read-only"), "{out}");
    assert!(out.contains("greeting hello pinned hello"), "{out}");

    // On the host: the secret lives on a tmpfs of its own, the ConfigMap's files on disk,
    // each with the mode asked for.
    let creds = volume_dir(&agent, &k, "secret", "creds");
    assert_eq!(
        fs_type(&creds).as_deref(),
        Some("tmpfs"),
        "{}",
        creds.display()
    );
    let conf = volume_dir(&agent, &k, "configmap", "conf");
    assert_eq!(fs_type(&conf), None);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: std::path::PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(creds.join("PASSWORD")), 0o400);
    assert_eq!(mode(conf.join("sub/greeting.txt")), 0o600);
    let events = k.ok(&["get", "events", "-o", "jsonpath={.items[*].reason}"]);
    assert!(
        events.contains("InvalidEnvironmentVariableNames"),
        "{events}"
    );

    // A change reaches the mounted file within a resync; the subPath mount keeps what it
    // bound, as with the kubelet.
    k.ok(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"greeting.txt":"bonjour"}}"#,
    ]);
    wait_for(
        "the new greeting in the file",
        Duration::from_secs(30),
        || logs().contains("greeting bonjour pinned hello"),
    )
    .await;
    k.ok(&["delete", "pod", "reader", "--wait=true"]);
    // The pod leaves the API once stopped; its directories go just after.
    wait_for(
        "the secret's tmpfs gone with the pod",
        Duration::from_secs(20),
        || !creds.exists() && fs_type(&creds).is_none(),
    )
    .await;
}

const WAITER: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: waiter}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    env:
    - {name: LATE, valueFrom: {configMapKeyRef: {name: later, key: LATE}}}
    command: ["/bin/sh", "-c", "echo late=$LATE; sleep 3600"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_holds_the_container_until_it_exists() {
    let agent = Agent::start_configured("pod-objects-wait", "sync_backoff = \"1s\"\n", "").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(WAITER);
    let waiting = || {
        k.jsonpath(
            &["pod", "waiter"],
            "{.status.containerStatuses[0].state.waiting.reason}:{.status.containerStatuses[0].state.waiting.message}",
        )
    };
    wait_for(
        "CreateContainerConfigError",
        Duration::from_secs(60),
        || waiting() == "CreateContainerConfigError:configmap default/later not found",
    )
    .await;
    k.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later}\ndata: {OTHER: x}\n");
    wait_for("the missing key named", Duration::from_secs(60), || {
        waiting() == "CreateContainerConfigError:configmap default/later has no key \"LATE\""
    })
    .await;
    k.ok(&[
        "patch",
        "configmap",
        "later",
        "--type=merge",
        "-p",
        r#"{"data":{"LATE":"now"}}"#,
    ]);
    wait_for("waiter Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "waiter"], "{.status.phase}") == "Running"
    })
    .await;
    wait_for(
        "the value in its environment",
        Duration::from_secs(20),
        || k.run(&["logs", "waiter"]).stdout.contains("late=now"),
    )
    .await;
    k.ok(&["delete", "pod", "waiter", "--wait=true"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_root_container_reads_its_secret_through_fs_group() {
    let agent = Agent::start("pod-objects-group").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(OBJECTS);
    k.apply(
        r#"apiVersion: v1
kind: Pod
metadata: {name: grouped}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  volumes:
  - {name: creds, secret: {secretName: creds, defaultMode: 0400}}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    volumeMounts: [{name: creds, mountPath: /etc/creds}]
    command: ["/bin/sh", "-c", "echo \"read $(cat /etc/creds/PASSWORD) as $(id -u)\"; sleep 3600"]
"#,
    );
    wait_for("the secret read", Duration::from_secs(60), || {
        k.run(&["logs", "grouped"])
            .stdout
            .contains("read hunter2 as 1000")
    })
    .await;
    k.ok(&["delete", "pod", "grouped", "--wait=true"]);
}
