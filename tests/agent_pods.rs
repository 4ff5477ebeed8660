//! `podvisor run` end to end: manifests in, pods in containerd, status out.

mod common;

use std::time::{Duration, Instant};

use common::agent::Agent;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn container<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    let s = p.status.as_ref()?;
    s.container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
        .find(|c| c.name == name)
}

fn running(p: &Pod, name: &str) -> bool {
    container(p, name).is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

fn restarts(p: &Pod, name: &str) -> i32 {
    container(p, name).map_or(0, |c| c.restart_count)
}

fn pod_yaml(name: &str, extra_spec: &str, containers: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{extra_spec}  containers:\n{containers}"
    )
}

fn container_yaml(name: &str, script: &str) -> String {
    format!(
        "  - name: {name}\n    image: localhost/podvisor/busybox:test\n    command: [\"/bin/sh\", \"-c\", {}]\n",
        serde_json::to_string(script).unwrap()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_containers_run_in_order_and_containers_share_an_empty_dir() {
    let agent = Agent::start("init").await;
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ordered\nspec:\n  volumes:\n  - name: data\n    emptyDir: {{}}\n  initContainers:\n{}{}  containers:\n{}{}",
        container_yaml("first", "echo one >> /data/order; sleep 1")
            + "    volumeMounts: [{name: data, mountPath: /data}]\n",
        container_yaml("second", "echo two >> /data/order")
            + "    volumeMounts: [{name: data, mountPath: /data}]\n",
        container_yaml("writer", "echo shared-by-writer > /data/msg; sleep 3600")
            + "    volumeMounts: [{name: data, mountPath: /data}]\n",
        container_yaml(
            "reader",
            "while [ ! -f /data/msg ]; do sleep 0.1; done; cat /data/order /data/msg; sleep 3600"
        ) + "    volumeMounts: [{name: data, mountPath: /data}]\n",
    );
    agent.write("ordered.yaml", &yaml);
    let p = agent
        .wait_pod(
            "ordered",
            "both containers running",
            Duration::from_secs(30),
            |p| running(p, "writer") && running(p, "reader"),
        )
        .await;
    assert_eq!(phase(&p), "Running");
    let done = |n: &str| {
        container(&p, n)
            .unwrap()
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap()
    };
    let (first, second) = (done("first"), done("second"));
    assert_eq!((first.exit_code, second.exit_code), (0, 0));
    assert!(
        first.finished_at.unwrap().0 <= second.started_at.unwrap().0,
        "second started after first finished"
    );
    let second_done = second.finished_at.unwrap().0;
    for app in ["writer", "reader"] {
        let started = container(&p, app)
            .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.clone())
            .unwrap()
            .0;
        assert!(
            second_done <= started,
            "{app} started after the init containers finished"
        );
    }
    let conditions: Vec<(String, String)> = p
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| (c.type_, c.status))
        .collect();
    assert!(conditions.contains(&("Initialized".into(), "True".into())));
    assert!(conditions.contains(&("Ready".into(), "True".into())));
    common::eventually("the reader's output", Duration::from_secs(10), || async {
        (agent.logs("ordered", "reader").await == "one\ntwo\nshared-by-writer\n").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_policies_decide_what_runs_again() {
    let agent = Agent::start("policies").await;
    for (name, policy, code) in [
        ("never-ok", "Never", 0),
        ("never-fail", "Never", 1),
        ("onfailure-ok", "OnFailure", 0),
        ("onfailure-fail", "OnFailure", 1),
        ("always-ok", "Always", 0),
        ("always-fail", "Always", 1),
    ] {
        let spec = format!("  restartPolicy: {policy}\n");
        agent.write(
            &format!("{name}.yaml"),
            &pod_yaml(
                name,
                &spec,
                &container_yaml("c", &format!("sleep 0.5; exit {code}")),
            ),
        );
    }
    let limit = Duration::from_secs(40);
    let p = agent
        .wait_pod("never-ok", "Succeeded", limit, |p| phase(p) == "Succeeded")
        .await;
    assert_eq!(restarts(&p, "c"), 0);
    let p = agent
        .wait_pod("never-fail", "Failed", limit, |p| phase(p) == "Failed")
        .await;
    assert_eq!(restarts(&p, "c"), 0);
    let p = agent
        .wait_pod("onfailure-ok", "Succeeded", limit, |p| {
            phase(p) == "Succeeded"
        })
        .await;
    assert_eq!(restarts(&p, "c"), 0);
    agent
        .wait_pod("onfailure-fail", "restarted", limit, |p| {
            restarts(p, "c") >= 1
        })
        .await;
    agent
        .wait_pod("always-ok", "restarted", limit, |p| restarts(p, "c") >= 1)
        .await;
    agent
        .wait_pod("always-fail", "restarted", limit, |p| restarts(p, "c") >= 1)
        .await;
    // The ones that completed stay completed: never started again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for name in ["never-ok", "never-fail", "onfailure-ok"] {
        assert_eq!(restarts(&agent.pod(name).await.unwrap(), "c"), 0, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_that_keeps_failing_backs_off_longer_each_time() {
    // Relisting: the schedule is what this test is about, and on containerd 1.7 the
    // other tests' agents share the event stream, which hands each event to one
    // subscriber only (containerd#7318); an exit lost to another agent is found by the
    // 10 s safety relist, which shifted the whole schedule by 10 s in one CI run.
    let agent = Agent::start_with("crashloop", "[pleg]\nmode = \"relist\"\n").await;
    agent.write(
        "crash.yaml",
        &pod_yaml("crash", "", &container_yaml("c", "echo failing; exit 1")),
    );
    let t0 = Instant::now();
    let mut seen_at = Vec::new();
    let mut saw_backoff = false;
    while seen_at.len() < 4 {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "too slow: {seen_at:?}\n{}",
            agent.log_tail(30)
        );
        if let Some(p) = agent.pod("crash").await {
            let n = restarts(&p, "c") as usize;
            while seen_at.len() <= n && seen_at.len() < 4 {
                seen_at.push(t0.elapsed());
            }
            let waiting = container(&p, "c")
                .and_then(|c| c.state.clone())
                .and_then(|s| s.waiting)
                .and_then(|w| w.reason);
            saw_backoff |= waiting.as_deref() == Some("CrashLoopBackOff");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        saw_backoff,
        "the status showed CrashLoopBackOff while waiting"
    );
    let gaps: Vec<f64> = seen_at
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    // First restart without backoff (only relist and start time, which a busy CI machine
    // stretches), then about 10 s, then about 20 s.
    assert!(gaps[0] < 8.0, "{gaps:?}");
    assert!((8.0..16.0).contains(&gaps[1]), "{gaps:?}");
    assert!((17.0..28.0).contains(&gaps[2]), "{gaps:?}");
}

/// Waits until the app container of pod `name` logged `line`, which its shell prints right
/// after it set its SIGTERM trap. A container is Running as soon as its process exists:
/// a SIGTERM before the shell set its trap is ignored (the shell is its PID namespace's
/// init) or, while the runtime's init still runs in its place, ends it at once.
async fn wait_trapped(agent: &Agent, name: &str, line: &str) {
    common::eventually("the SIGTERM trap set", Duration::from_secs(10), || async {
        agent
            .logs(name, "app")
            .await
            .starts_with(line)
            .then_some(())
    })
    .await;
}

fn trap_container(out: &str, marker: &str) -> String {
    container_yaml(
        "app",
        &format!(
            "trap 'echo got-SIGTERM > /out/{marker}; exit 0' TERM; echo trapped; while true; do sleep 0.2; done"
        ),
    ) + &format!(
        "    volumeMounts: [{{name: out, mountPath: /out}}]\n  volumes:\n  - name: out\n    hostPath: {{path: {out}}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_file_stops_the_pod_with_sigterm_within_its_grace_period() {
    let agent = Agent::start("delete").await;
    let out = agent.out_dir();
    let yaml = pod_yaml(
        "graceful",
        "  terminationGracePeriodSeconds: 20\n",
        &trap_container(&out.display().to_string(), "signal"),
    );
    agent.write("graceful.yaml", &yaml);
    agent
        .wait_pod("graceful", "running", Duration::from_secs(30), |p| {
            running(p, "app")
        })
        .await;
    wait_trapped(&agent, "graceful", "trapped\n").await;
    let t0 = Instant::now();
    agent.remove("graceful.yaml");
    common::eventually(
        "the pod gone from the runtime",
        Duration::from_secs(20),
        || async { agent.runtime_pods().await.is_empty().then_some(()) },
    )
    .await;
    let took = t0.elapsed();
    assert_eq!(
        std::fs::read_to_string(out.join("signal")).unwrap(),
        "got-SIGTERM\n"
    );
    assert!(
        took < Duration::from_secs(10),
        "stopped by SIGTERM, not at the 20 s deadline: {took:?}"
    );
    common::eventually(
        "the pod gone from the API",
        Duration::from_secs(10),
        || async { agent.pod("graceful").await.is_none().then_some(()) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_a_manifest_replaces_the_pod_after_the_old_one_terminated() {
    let agent = Agent::start("edit").await;
    let out = agent.out_dir().display().to_string();
    // The old version takes two seconds to stop after SIGTERM.
    let v1 = container_yaml(
        "app",
        "trap 'sleep 2; echo old-stopped > /out/old; exit 0' TERM; echo v1; while true; do sleep 0.2; done",
    ) + &format!(
        "    volumeMounts: [{{name: out, mountPath: /out}}]\n  volumes:\n  - name: out\n    hostPath: {{path: {out}}}\n"
    );
    agent.write("web.yaml", &pod_yaml("web", "", &v1));
    let old = agent
        .wait_pod("web", "v1 running", Duration::from_secs(30), |p| {
            running(p, "app")
        })
        .await;
    let old_uid = old.metadata.uid.clone().unwrap();
    wait_trapped(&agent, "web", "v1\n").await;
    let v2 = container_yaml("app", "echo v2; date +%s%N > /out/new-started; sleep 3600")
        + &format!(
            "    volumeMounts: [{{name: out, mountPath: /out}}]\n  volumes:\n  - name: out\n    hostPath: {{path: {out}}}\n"
        );
    agent.write("web.yaml", &pod_yaml("web", "", &v2));
    let new = agent
        .wait_pod("web", "v2 running", Duration::from_secs(30), |p| {
            p.metadata.uid.as_deref() != Some(old_uid.as_str()) && running(p, "app")
        })
        .await;
    assert_ne!(
        new.metadata.uid, old.metadata.uid,
        "an edit makes a new pod"
    );
    // The old container finished its two-second shutdown before the new one started.
    let old_stopped = std::fs::metadata(agent.out_dir().join("old"))
        .unwrap_or_else(|e| {
            panic!(
                "the old container left no mark of its SIGTERM trap ({e}); the new pod: {:#?}\nagent log tail:\n{}",
                new.status,
                agent.log_tail(60)
            )
        })
        .modified()
        .unwrap();
    // Running means the shell exists, not that it has written its mark yet.
    let new_started = common::eventually(
        "the new container's start mark",
        Duration::from_secs(10),
        || async {
            std::fs::metadata(agent.out_dir().join("new-started"))
                .ok()
                .and_then(|m| m.modified().ok())
        },
    )
    .await;
    assert!(
        old_stopped <= new_started,
        "the new pod started before the old one stopped"
    );
    assert_eq!(agent.logs("web", "app").await, "v2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_pods_get_an_ip_and_host_network_pods_the_node_s() {
    let agent = Agent::start("network").await;
    agent.write(
        "bridge.yaml",
        &pod_yaml("bridge", "", &container_yaml("c", "sleep 3600")),
    );
    agent.write(
        "host.yaml",
        &pod_yaml(
            "host",
            "  hostNetwork: true\n",
            &format!(
                "{}    env:\n    - name: POD_IP\n      valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}\n",
                container_yaml("c", "echo ip=$POD_IP; sleep 3600")
            ),
        ),
    );
    let bridge = agent
        .wait_pod("bridge", "running", Duration::from_secs(30), |p| {
            running(p, "c")
        })
        .await;
    let ip = bridge.status.unwrap().pod_ip.expect("a pod IP");
    let subnet = common::containerd::pod_subnet_prefix();
    assert!(ip.starts_with(subnet), "{ip} outside {subnet}0.0/16");
    let host = agent
        .wait_pod("host", "running", Duration::from_secs(30), |p| {
            running(p, "c")
        })
        .await;
    // As the kubelet reports it: a host-network pod's IP is the node's address.
    let status = host.status.unwrap();
    assert_eq!(status.pod_ip, status.host_ip);
    // And so is its environment's (the upstream Downward API spec for host-network pods).
    let said = format!("ip={}\n", status.host_ip.clone().unwrap_or_default());
    let mut logged = String::new();
    for _ in 0..50 {
        logged = agent.logs("host", "c").await;
        if logged.ends_with('\n') {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(logged, said);
    let internal = r#"{.status.addresses[?(@.type=="InternalIP")].address}"#;
    let k = common::kubectl::Kubectl::for_agent(&agent);
    let address = k.jsonpath(&["node", &agent.node], internal);
    assert_eq!(status.host_ip.as_deref(), Some(address.as_str()));
    assert!(address.parse::<std::net::IpAddr>().is_ok(), "{address:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_sandbox_with_our_labels_is_removed_by_housekeeping() {
    use podvisor_cri::Runtime;
    let agent = Agent::start("orphan").await;
    let rt = common::runtime().await;
    let uid = common::unique_uid("orphan");
    let mut cfg = podvisor_cri::sample::sandbox_config(&uid, "orphan", true, "/tmp");
    cfg.labels
        .insert(podvisor_cri::labels::MANAGED_BY.into(), agent.node.clone());
    let id = rt.run_sandbox(&cfg).await.unwrap();
    // Someone else's sandbox on the same containerd is left alone.
    let foreign = common::unique_uid("foreign");
    let foreign_cfg = podvisor_cri::sample::sandbox_config(&foreign, "foreign", true, "/tmp");
    rt.run_sandbox(&foreign_cfg).await.unwrap();
    common::eventually("the orphan removed", Duration::from_secs(20), || async {
        rt.sandbox_status(&id)
            .await
            .err()
            .filter(|e| e.is_not_found())
            .map(|_| ())
    })
    .await;
    let still = rt.list_pods().await.unwrap();
    assert!(
        still.iter().any(|p| p.pod.uid == foreign),
        "another owner's pod was touched"
    );
    common::remove_pod(&rt, &foreign).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_manifest_is_reported_and_the_good_ones_run() {
    let agent = Agent::start("badfile").await;
    agent.write(
        "good.yaml",
        &pod_yaml("good", "", &container_yaml("c", "sleep 3600")),
    );
    agent.write(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers: []\n",
    );
    agent
        .wait_pod("good", "running", Duration::from_secs(30), |p| {
            running(p, "c")
        })
        .await;
    let body = podvisor_debug::client::get(
        &agent.endpoint,
        "/debug/manifest-errors",
        Some(&agent.token()),
    )
    .await
    .unwrap();
    let errors: serde_json::Value = serde_json::from_str(&body).unwrap();
    let bad = &errors[0];
    assert!(
        bad["path"].as_str().unwrap().ends_with("bad.yaml"),
        "{errors}"
    );
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("RFC 1123 subdomain"),
        "{errors}"
    );
    // Reported once in the log, not on every rescan.
    tokio::time::sleep(Duration::from_secs(3)).await;
    agent.write(
        "good2.yaml",
        &pod_yaml("good2", "", &container_yaml("c", "sleep 3600")),
    );
    agent
        .wait_pod("good2", "running", Duration::from_secs(30), |p| {
            running(p, "c")
        })
        .await;
    let mentions = agent.agent_log().matches("manifest not used").count();
    assert_eq!(mentions, 1, "{}", agent.log_tail(30));
    assert_eq!(agent.pods().await.len(), 2, "the bad file made no pod");

    // A typo in a running pod's manifest is reported and loses nothing: the pod of the
    // last valid version keeps running, the same container, until the file is fixed.
    let container_id = |p: Option<Pod>| {
        p.and_then(|p| p.status?.container_statuses?.first()?.container_id.clone())
    };
    let before = container_id(agent.pod("good").await).expect("good runs");
    agent.write(
        "good.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: good\nspec: 7\n",
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = podvisor_debug::client::get(
            &agent.endpoint,
            "/debug/manifest-errors",
            Some(&agent.token()),
        )
        .await
        .unwrap();
        if body.contains("good.yaml") {
            assert!(body.contains("last valid version keeps running"), "{body}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the broken file was not reported: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Longer than a housekeeping period and a resync: nothing was stopped or replaced.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let now = agent.pod("good").await;
    assert!(now.as_ref().is_some_and(|p| restarts(p, "c") == 0));
    assert_eq!(
        container_id(now).as_deref(),
        Some(before.as_str()),
        "{}",
        agent.log_tail(30)
    );
    agent.write(
        "good.yaml",
        &pod_yaml("good", "", &container_yaml("c", "sleep 3600")),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        container_id(agent.pod("good").await).as_deref(),
        Some(before.as_str())
    );
    assert!(
        agent.agent_log().contains("manifest problem resolved"),
        "{}",
        agent.log_tail(30)
    );
}

/// A pod that completed stays completed when the agent is killed and started again: its
/// status, kept only in the node's store (a static pod's on its mirror), says it finished,
/// so neither the static pod nor the API pod runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_that_completed_stay_completed_across_a_sigkilled_agent() {
    let mut agent = Agent::start("completed").await;
    agent.write(
        "done.yaml",
        &pod_yaml(
            "done",
            "  restartPolicy: Never\n",
            &container_yaml("c", "exit 0"),
        ),
    );
    let k = common::kubectl::Kubectl::for_agent(&agent);
    let image = "--image=localhost/podvisor/busybox:test";
    k.ok(&["run", "api-done", image, "--restart=Never", "--", "true"]);
    let limit = Duration::from_secs(60);
    for name in ["done", "api-done"] {
        let pod = agent.name(name);
        let pod = if name == "api-done" {
            name.to_string()
        } else {
            pod
        };
        common::eventually(&format!("{pod} Succeeded"), limit, || async {
            let p = agent.pods().await;
            let p = p
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(&pod))?;
            (phase(p) == "Succeeded").then_some(())
        })
        .await;
    }
    // As the kubelet does, a finished pod keeps its stopped sandbox and last container
    // until it is deleted.
    common::eventually("both kept, stopped", limit, || async {
        let kept = agent.runtime_pods().await;
        let stopped = kept.iter().all(|p| {
            p.containers
                .iter()
                .all(|c| c.state == podvisor_cri::ContainerState::Exited)
        });
        (kept.len() == 2 && stopped).then_some(())
    })
    .await;
    // The runtime may still drop them (a garbage collection, a runtime reset): then only
    // their statuses say they ran.
    common::agent::remove_owned(&common::runtime().await, &agent.node).await;
    // Which container ran each: a pod run again would show another.
    let ran = |pods: &[Pod]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = pods
            .iter()
            .map(|p| {
                let id = p.status.as_ref().and_then(|s| {
                    let c = s.container_statuses.as_ref()?.first()?;
                    c.container_id.clone()
                });
                (
                    p.metadata.name.clone().unwrap_or_default(),
                    id.unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = ran(&agent.pods().await);
    agent.kill9();
    agent.restart().await;
    tokio::time::sleep(Duration::from_secs(5)).await; // relists, resyncs, housekeeping
    let pods = agent.pods().await;
    assert_eq!(pods.len(), 2, "{pods:?}");
    for p in &pods {
        assert_eq!(
            phase(p),
            "Succeeded",
            "{:?}\n{}",
            p.metadata.name,
            agent.log_tail(30)
        );
    }
    assert_eq!(
        ran(&pods),
        before,
        "nothing ran again\n{}",
        agent.log_tail(30)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_agent_adopts_its_ten_pods_without_restarting_any() {
    let mut agent = Agent::start("adopt").await;
    for i in 0..10 {
        agent.write(
            &format!("p{i}.yaml"),
            // `sleep`, PID 1 of its own namespace, ignores SIGTERM: only the grace
            // period (read back from the container when p0 is an orphan) stops it.
            &pod_yaml(
                &format!("p{i}"),
                "  terminationGracePeriodSeconds: 2\n",
                &container_yaml("c", "sleep 3600"),
            ),
        );
    }
    let ids = |pods: &[Pod]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = pods
            .iter()
            .map(|p| {
                (
                    p.metadata.name.clone().unwrap(),
                    container(p, "c")
                        .and_then(|c| c.container_id.clone())
                        .unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    };
    common::eventually("ten pods running", Duration::from_secs(60), || async {
        let pods = agent.pods().await;
        (pods.len() == 10 && pods.iter().all(|p| running(p, "c"))).then_some(())
    })
    .await;
    let before = ids(&agent.pods().await);
    let sandboxes_before: Vec<String> = agent
        .runtime_pods()
        .await
        .iter()
        .flat_map(|p| p.sandboxes.iter().map(|s| s.id.clone()))
        .collect();
    agent.kill9();
    agent.restart().await;
    tokio::time::sleep(Duration::from_secs(5)).await; // a few relists, resyncs and housekeepings
    let pods = agent.pods().await;
    assert_eq!(ids(&pods), before, "same containers");
    assert!(
        pods.iter()
            .all(|p| restarts(p, "c") == 0 && running(p, "c"))
    );
    let mut sandboxes_after: Vec<String> = agent
        .runtime_pods()
        .await
        .iter()
        .flat_map(|p| p.sandboxes.iter().map(|s| s.id.clone()))
        .collect();
    let mut b = sandboxes_before.clone();
    b.sort();
    sandboxes_after.sort();
    assert_eq!(sandboxes_after, b, "no sandbox recreated");

    // A manifest removed while the agent was down: its pod is stopped as an orphan and
    // its remembered status goes too; the other nine are untouched.
    let p0_uid = agent.static_uid("p0").await.expect("p0 has a uid");
    agent.kill9();
    agent.remove("p0.yaml");
    agent.restart().await;
    let gone = agent.name("p0");
    common::eventually(
        "p0 gone from the runtime and the API",
        Duration::from_secs(30),
        || async {
            let listed = agent.pods().await;
            let in_runtime = agent.runtime_pods().await;
            (listed.len() == 9
                && !listed
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(&gone))
                && in_runtime.len() == 9)
                .then_some(())
        },
    )
    .await;
    let after = ids(&agent.pods().await);
    assert_eq!(
        after,
        before[1..].to_vec(),
        "the others kept their containers"
    );
    // Its volumes and logs are swept too; the others' stay.
    let dirs_of = |uid: &str| -> Vec<std::path::PathBuf> {
        let state = agent.dir.join("state/pods").join(uid);
        let logs = std::fs::read_dir(agent.dir.join("logs"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(uid));
        logs.chain(state.exists().then_some(state)).collect()
    };
    common::eventually(
        "p0's directories swept",
        Duration::from_secs(10),
        || async { dirs_of(&p0_uid).is_empty().then_some(()) },
    )
    .await;
    let p1_uid = agent.static_uid("p1").await.unwrap();
    assert_eq!(
        dirs_of(&p1_uid).len(),
        2,
        "p1 keeps its state and log directories"
    );

    // SIGTERM: the agent exits 0 and the pods keep running.
    assert_eq!(agent.terminate(), Some(0));
    assert_eq!(agent.runtime_pods().await.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_log_ends_when_the_container_does() {
    let agent = Agent::start("follow").await;
    agent.write(
        "talker.yaml",
        &pod_yaml(
            "talker",
            "  restartPolicy: Never\n",
            &container_yaml("c", "for i in 1 2 3; do echo line $i; sleep 1; done"),
        ),
    );
    agent
        .wait_pod("talker", "running", Duration::from_secs(30), |p| {
            running(p, "c")
        })
        .await;
    // The stream must end by itself once the container exited (about 3 s) and the agent saw
    // it (below); the test gives up at 20 s, past the longest wait allowed.
    let t0 = std::time::Instant::now();
    let path = format!(
        "/api/v1/namespaces/default/pods/{}/log?follow=true",
        agent.name("talker")
    );
    let mut body = Vec::new();
    let api = agent.api();
    let follow = api.get_stream(&path, |b| body.extend_from_slice(b));
    tokio::time::timeout(Duration::from_secs(20), follow)
        .await
        .expect("the follow ends by itself")
        .expect("the follow is served");
    let body = String::from_utf8(body).unwrap();
    assert_eq!(body, "line 1\nline 2\nline 3\n", "{}", agent.log_tail(20));
    // Bounded by when the agent sees the exit: a relist (1 s) on containerd 1.6; on 1.7 the
    // event, or, when other agents on the same containerd took it (containerd#7318, as in
    // this test suite), the 10 s safety relist.
    assert!(t0.elapsed() < Duration::from_secs(16), "{:?}", t0.elapsed());

    // The same manifest removed once the pod completed, then written again: the same UID
    // runs anew, and its log holds only the new run (not appended to the old file).
    agent
        .wait_pod("talker", "completed", Duration::from_secs(10), |p| {
            phase(p) == "Succeeded"
        })
        .await;
    let yaml = std::fs::read_to_string(agent.manifest("talker.yaml")).unwrap();
    agent.remove("talker.yaml");
    common::eventually("talker gone", Duration::from_secs(20), || async {
        agent.pod("talker").await.is_none().then_some(())
    })
    .await;
    agent.write("talker.yaml", &yaml);
    agent
        .wait_pod("talker", "completed again", Duration::from_secs(30), |p| {
            phase(p) == "Succeeded"
        })
        .await;
    assert_eq!(agent.logs("talker", "c").await, "line 1\nline 2\nline 3\n");
}
