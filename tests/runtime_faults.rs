//! A flaky runtime, through the fault-injecting CRI proxy between a real agent and
//! containerd (issue 17's reliability harness, issue 18's stuck terminations): answers
//! lost after the work was done, one pod's status calls hanging, a stop that times out,
//! and a burst of 10,000 container events.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::agent::Agent;
use k8s_openapi::api::core::v1::Pod;
use podvisor_cri::proto::{ContainerEventResponse, PodSandboxMetadata, PodSandboxStatus};
use podvisor_cri_proxy::{Action, CriProxy, Fault, Outcome};

const IMAGE: &str = "localhost/podvisor/busybox:test";

async fn proxy(name: &str) -> CriProxy {
    common::runtime().await;
    let dir = std::env::temp_dir().join("podvisor-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join(format!("{name}-{}.sock", std::process::id()));
    CriProxy::start(&common::endpoint(), &socket)
        .await
        .expect("the proxy starts")
}

fn looping(name: &str, grace: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: {grace}\n  containers:\n  - {{name: c, image: {IMAGE}, command: [sh, -c, \"trap 'exit 0' TERM; while true; do sleep 0.2; done\"]}}\n"
    )
}

fn running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn exit_code(p: &Pod) -> Option<i32> {
    let c = p.status.as_ref()?.container_statuses.as_ref()?.first()?;
    Some(c.state.as_ref()?.terminated.as_ref()?.exit_code)
}

async fn all_running(agent: &Agent, n: usize) {
    common::eventually(
        &format!("{n} pods running"),
        Duration::from_secs(90),
        || async {
            let pods = agent.pods().await;
            (pods.iter().filter(|p| running(p)).count() == n).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_answer_is_lost_leaves_exactly_one_sandbox_and_container() {
    let proxy = proxy("lost").await;
    proxy.add(
        Fault::on("RunPodSandbox", Action::Drop)
            .about("lost-sandbox")
            .times(1),
    );
    proxy.add(
        Fault::on("CreateContainer", Action::Drop)
            .about("lost-container")
            .times(1),
    );
    let agent = Agent::start_on(
        "lost",
        &proxy.endpoint(),
        "sync_backoff = \"1s\"\n",
        "[runtime]\nrequest_timeout = \"3s\"\n",
    )
    .await;
    agent.write("a.yaml", &looping("lost-sandbox", 1));
    agent.write("b.yaml", &looping("lost-container", 1));
    all_running(&agent, 2).await;
    let calls = proxy.calls_since(Instant::now() - Duration::from_secs(600));
    for (method, pod) in [
        ("RunPodSandbox", "lost-sandbox"),
        ("CreateContainer", "lost-container"),
    ] {
        assert!(
            calls
                .iter()
                .any(|c| c.method == method && c.outcome == Outcome::Dropped && c.mentions(pod)),
            "{method} of {pod} was never dropped"
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for pod in agent.runtime_pods().await {
        assert_eq!(
            pod.sandboxes.len(),
            1,
            "{}: {:?}",
            pod.pod.name,
            pod.sandboxes
        );
        let mut per_attempt: BTreeMap<(String, u32), usize> = BTreeMap::new();
        for c in &pod.containers {
            *per_attempt.entry((c.name.clone(), c.attempt)).or_default() += 1;
        }
        assert!(
            per_attempt.values().all(|n| *n == 1),
            "{}: {per_attempt:?}",
            pod.pod.name
        );
    }
    for name in ["lost-sandbox", "lost-container"] {
        let p = agent.pod(name).await.unwrap();
        let c = &p.status.unwrap().container_statuses.unwrap()[0];
        assert_eq!(c.restart_count, 0, "{name}");
    }
}

fn gated(name: &str, gate: &std::path::Path) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: {IMAGE}\n    command: [sh, -c, \"until [ -e /gate/{name} ]; do sleep 0.05; done; exit 3\"]\n    volumeMounts: [{{name: gate, mountPath: /gate}}]\n  volumes: [{{name: gate, hostPath: {{path: {}}}}}]\n",
        gate.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pod_whose_status_calls_hang_holds_up_no_other_pod() {
    let proxy = proxy("hung").await;
    // The runtime's own deadline for the calls the PLEG makes aside, kept short so the
    // pod's exit is reported soon after the runtime answers again. The PLEG relists: the
    // exits must be found by the PLEG's own inspections, and containerd 1.7 hands each of
    // its events to one subscriber only, so beside this file's other agents an evented
    // PLEG would see some exits only at its safety relist, 10 s later (containerd#7318).
    let mut agent = Agent::start_on(
        "hung",
        &proxy.endpoint(),
        "",
        "[runtime]\nrequest_timeout = \"10s\"\n[pleg]\nmode = \"relist\"\n",
    )
    .await;
    let gate = agent.out_dir();
    let names: Vec<String> = (0..5).map(|i| format!("g{i}")).collect();
    for n in &names {
        agent.write(&format!("{n}.yaml"), &gated(n, &gate));
    }
    all_running(&agent, 5).await;
    let hung = agent.static_uid("g0").await.unwrap();
    // Every call about the pod (its listings by UID label, its sandbox) hangs from now on.
    proxy.add(Fault::on("*", Action::Hang).about(&hung));
    proxy.add(Fault::on("PodSandboxStatus", Action::Hang).about(&pod_sandbox(&agent, &hung).await));
    let opened = Instant::now();
    for n in &names {
        std::fs::write(gate.join(n), "").unwrap();
    }
    let mut seen = Vec::new();
    for n in &names[1..] {
        agent
            .wait_pod(n, "its exit reported", Duration::from_secs(10), |p| {
                exit_code(p) == Some(3)
            })
            .await;
        seen.push((n.clone(), opened.elapsed()));
    }
    eprintln!("hung: exits of the other pods seen after {seen:?}");
    // Within the PLEG's inspection bound (2 s) and one relist period (1 s), not the
    // runtime's 10 s deadline: when the first inspection of the hung pod shares a relist
    // with the others' exits, their statuses are in the cache at once, but a worker that
    // synced after that relist began waits for the relist's end (the cache's global
    // timestamp, as the kubelet's cache), which the bound sets. A run at 2.2-2.4 s was
    // that case, not a pod held up by the hang.
    for (n, took) in &seen {
        assert!(
            *took <= Duration::from_secs(3),
            "{n}'s exit took {took:?} to be seen while g0 hangs"
        );
    }
    // The hung pod itself is inspected aside once its inspection ran past the bound.
    common::eventually("g0 inspected aside", Duration::from_secs(5), || async {
        (agent.actor_state("pleg").await["slow_pods"] == 1).then_some(())
    })
    .await;
    assert!(agent.alive());
    // Once the runtime answers again, the hung pod's exit is reported too.
    proxy.clear();
    agent
        .wait_pod(
            "g0",
            "its exit once the runtime answers",
            Duration::from_secs(30),
            |p| exit_code(p) == Some(3),
        )
        .await;
}

async fn pod_sandbox(agent: &Agent, uid: &str) -> String {
    let pods = agent.runtime_pods().await;
    let pod = pods
        .iter()
        .find(|p| p.pod.uid == uid)
        .expect("the pod runs");
    pod.sandboxes[0].id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_that_times_out_is_tried_again_until_the_pod_is_gone() {
    let proxy = proxy("stuck-stop").await;
    let agent = Agent::start_on(
        "stuck-stop",
        &proxy.endpoint(),
        "sync_backoff = \"2s\"\n",
        "[runtime]\nrequest_timeout = \"3s\"\n",
    )
    .await;
    agent.write("s.yaml", &looping("stuck", 1));
    all_running(&agent, 1).await;
    let uid = agent.static_uid("stuck").await.unwrap();
    let container = agent.runtime_pods().await[0].containers[0].id.clone();
    // The first stop of its container never answers (the runtime never hears of it).
    proxy.add(
        Fault::on("StopContainer", Action::Hang)
            .about(&container)
            .times(1),
    );
    let t0 = Instant::now();
    agent.remove("s.yaml");
    common::eventually(
        "the pod gone from the runtime",
        Duration::from_secs(30),
        || async {
            let pods = agent.runtime_pods().await;
            (!pods.iter().any(|p| p.pod.uid == uid)).then_some(())
        },
    )
    .await;
    let stops: Vec<_> = proxy
        .calls_since(t0)
        .into_iter()
        .filter(|c| c.method == "StopContainer" && c.mentions(&container))
        .collect();
    eprintln!(
        "stuck-stop: gone after {:?}; stops: {:?}",
        t0.elapsed(),
        stops
            .iter()
            .map(|c| (c.outcome, c.at - t0))
            .collect::<Vec<_>>()
    );
    assert_eq!(stops[0].outcome, Outcome::Hung);
    assert!(
        stops[1..].iter().any(|c| c.outcome == Outcome::Forwarded),
        "the stop was never tried again: {stops:?}"
    );
    common::eventually(
        "the mirror pod gone too",
        Duration::from_secs(10),
        || async { agent.pod("stuck").await.is_none().then_some(()) },
    )
    .await;
}

/// `n` container events about the agent's own containers (their sandboxes' labels say
/// whose they are), cycling through created, started, stopped: none of it true.
fn made_up_events(pods: &[podvisor_cri::Pod], n: usize) -> Vec<ContainerEventResponse> {
    let containers: Vec<(&podvisor_cri::Pod, &podvisor_cri::Container)> = pods
        .iter()
        .flat_map(|p| p.containers.iter().map(move |c| (p, c)))
        .collect();
    (0..n)
        .map(|i| {
            let (pod, c) = containers[i % containers.len()];
            let sandbox = &pod.sandboxes[0];
            ContainerEventResponse {
                container_id: c.id.clone(),
                container_event_type: (i % 3) as i32,
                created_at: 1,
                pod_sandbox_status: Some(PodSandboxStatus {
                    id: sandbox.id.clone(),
                    metadata: Some(PodSandboxMetadata {
                        name: pod.pod.name.clone(),
                        uid: pod.pod.uid.clone(),
                        namespace: pod.pod.namespace.clone(),
                        attempt: sandbox.attempt,
                    }),
                    labels: sandbox
                        .managed_by
                        .iter()
                        .map(|node| (podvisor_cri::labels::MANAGED_BY.to_string(), node.clone()))
                        .collect(),
                    ..Default::default()
                }),
                containers_statuses: Vec::new(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_ten_thousand_container_events_converges_in_bounded_memory() {
    const EVENTS: usize = 10_000;
    let proxy = proxy("burst").await;
    // The proxy serves the event stream itself, on containerd 1.6 as on 1.7.
    proxy.add(Fault::on("GetContainerEvents", Action::ServeEvents));
    let agent = Agent::start_on("burst", &proxy.endpoint(), "", "").await;
    for i in 0..10 {
        agent.write(&format!("b{i}.yaml"), &looping(&format!("b{i}"), 1));
    }
    all_running(&agent, 10).await;
    common::eventually(
        "the agent on the served stream",
        Duration::from_secs(20),
        || async {
            let s = agent.actor_state("pleg").await;
            (proxy.event_streams() >= 1 && s["mode"] == "evented" && s["stream_open"] == true)
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pods = agent.runtime_pods().await;
    let ids = |pods: &[podvisor_cri::Pod]| -> Vec<String> {
        let mut v: Vec<String> = pods
            .iter()
            .flat_map(|p| {
                p.sandboxes
                    .iter()
                    .map(|s| s.id.clone())
                    .chain(p.containers.iter().map(|c| c.id.clone()))
            })
            .collect();
        v.sort();
        v
    };
    let before = ids(&pods);
    let received = agent.actor_state("pleg").await["events_received"]
        .as_u64()
        .unwrap();
    let rss_before = agent.rss_kib();
    let t0 = Instant::now();
    assert!(proxy.inject_events(&made_up_events(&pods, EVENTS)) >= 1);
    common::eventually("every event handled", Duration::from_secs(120), || async {
        let s = agent.actor_state("pleg").await;
        (s["events_received"].as_u64().unwrap() >= received + EVENTS as u64).then_some(())
    })
    .await;
    let handled = t0.elapsed();
    common::eventually("every mailbox drained", Duration::from_secs(30), || async {
        agent.busy_mailboxes().await.is_empty().then_some(())
    })
    .await;
    let rss_after = agent.rss_kib();
    eprintln!(
        "burst: {EVENTS} events handled in {handled:?}; RSS {rss_before} KiB -> {rss_after} KiB"
    );
    assert!(
        rss_after < rss_before + 32 * 1024,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
    // Nothing was true: the same pods, running, none restarted.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(ids(&agent.runtime_pods().await), before);
    let pods = agent.pods().await;
    assert_eq!(pods.iter().filter(|p| running(p)).count(), 10);
    for p in &pods {
        let c = &p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert_eq!(c.restart_count, 0, "{:?}", p.metadata.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_pods_never_has_more_mutations_in_flight_than_the_bound() {
    let proxy = proxy("bound").await;
    // A slow runtime: every sandbox takes 300 ms more, so the burst piles up.
    proxy.add(Fault::on(
        "RunPodSandbox",
        Action::Delay(Duration::from_millis(300)),
    ));
    let agent = Agent::start_on(
        "bound",
        &proxy.endpoint(),
        "",
        "[runtime]\nmax_mutations_in_flight = 3\n",
    )
    .await;
    let t0 = Instant::now();
    for i in 0..12 {
        agent.write(&format!("b{i}.yaml"), &looping(&format!("b{i}"), 1));
    }
    all_running(&agent, 12).await;
    let mutating =
        |c: &podvisor_cri_proxy::Call| podvisor_cri::client::MUTATIONS.contains(&c.method.as_str());
    let most = proxy.most_at_once(t0, mutating);
    let sandboxes = proxy.most_at_once(t0, |c| c.method == "RunPodSandbox");
    eprintln!("bound: at most {most} mutations, {sandboxes} sandboxes at once");
    assert!(most <= 3, "{most} mutations at once past a bound of 3");
    assert_eq!(most, 3, "the burst used the bound");

    // Removing them all at once: stops are bounded with the rest (each is the runtime's
    // work here, 300 ms more for every one, well within the second a stop may hold).
    proxy.add(Fault::on(
        "StopContainer",
        Action::Delay(Duration::from_millis(300)),
    ));
    let t1 = Instant::now();
    for i in 0..12 {
        agent.remove(&format!("b{i}.yaml"));
    }
    common::eventually("every pod gone", Duration::from_secs(90), || async {
        agent.runtime_pods().await.is_empty().then_some(())
    })
    .await;
    // A stop holds its permit for its first second only, and a loaded machine can take
    // longer over one: each stop is counted while it may hold it (less 100 ms for the
    // way from the agent's permit to the proxy).
    let held = podvisor_cri::client::STOP_HOLD - Duration::from_millis(100);
    let most = proxy.most_spans_at_once(t1, |c| match c.method.as_str() {
        "StopContainer" => Some(held),
        _ => mutating(c).then_some(c.took),
    });
    let stops = proxy.most_at_once(t1, |c| c.method == "StopContainer");
    eprintln!("removal: at most {most} mutations and stops, {stops} stops at once");
    assert!(
        most <= 3,
        "{most} mutations and stops at once past a bound of 3"
    );
    assert!(stops >= 2, "the stops ran side by side: {stops}");
}

/// A stop holds its permit for a second at most: after that it waits for the container
/// (one that ignores SIGTERM waits out its grace period), and others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_that_lasts_holds_the_runtimes_permit_for_a_second_at_most() {
    let proxy = proxy("stop-hold").await;
    let agent = Agent::start_on(
        "stop-hold",
        &proxy.endpoint(),
        "",
        "[runtime]\nmax_mutations_in_flight = 1\n",
    )
    .await;
    // It ignores SIGTERM: its stop lasts its whole 8 s grace period.
    let stubborn = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: slow}}\nspec:\n  terminationGracePeriodSeconds: 8\n  containers:\n  - {{name: c, image: {IMAGE}, command: [sh, -c, \"trap '' TERM; while true; do sleep 0.2; done\"]}}\n"
    );
    agent.write("slow.yaml", &stubborn);
    all_running(&agent, 1).await;
    let t0 = Instant::now();
    agent.remove("slow.yaml");
    // (The proxy records a call once it is answered: this one only after its 8 s.)
    tokio::time::sleep(Duration::from_millis(500)).await;
    agent.write("next.yaml", &looping("next", 1));
    common::eventually("the next pod running", Duration::from_secs(30), || async {
        agent.pod("next").await.filter(running).map(|_| ())
    })
    .await;
    let calls = common::eventually("the stop answered", Duration::from_secs(20), || async {
        let calls = proxy.calls_since(t0);
        calls
            .iter()
            .any(|c| c.method == "StopContainer")
            .then_some(calls)
    })
    .await;
    let stop = calls.iter().find(|c| c.method == "StopContainer").unwrap();
    let run = calls.iter().find(|c| c.method == "RunPodSandbox").unwrap();
    let waited = run.at.saturating_duration_since(stop.at);
    eprintln!(
        "the stop took {:?}; the next pod's sandbox was asked for {waited:?} after it began",
        stop.took
    );
    assert!(stop.took >= Duration::from_secs(7), "{:?}", stop.took);
    assert!(
        waited < Duration::from_secs(4),
        "{waited:?}: the sandbox waited for the stop's whole grace period"
    );
}
