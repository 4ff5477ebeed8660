//! Chaos against the real agent binary: a panic injected into one live actor of every
//! kind (supervisors included, the root aside: its escalation ends the process by design)
//! through the debug endpoint's fault injection, while static pods, an API pod and a
//! ReplicaSet's pods run. Each actor is back within a second, the agent lives on, and no
//! pod is touched: the same sandboxes and containers, nothing restarted, and not one call
//! that changes the runtime made while the actors crash and rebuild (the agent talks to
//! containerd through the fault-injecting proxy, which records every call).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::agent::Agent;
use common::kubectl::Kubectl;
use podvisor_cri_proxy::CriProxy;

const LOOP: &str = "trap 'exit 0' TERM; while true; do sleep 0.2; done";

fn static_pod(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {{name: c, image: localhost/podvisor/busybox:test, command: [sh, -c, \"{LOOP}\"]}}\n"
    )
}

const REPLICAS: &str = r#"apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - {name: c, image: localhost/podvisor/busybox:test, command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 0.2; done"]}
"#;

/// What each kind's summary must show again once its actor has rebuilt: its view of the
/// world (pods, phases, children), not its counters, which start again at zero.
const REBUILT: &[(&str, &[&str])] = &[
    ("api-pod-source", &["pods"]),
    ("image-manager", &["backing_off"]),
    ("manifest-source", &["pods", "bad_files"]),
    ("node-registrar", &["registered", "ready"]),
    ("pleg", &["pods_tracked", "mode", "healthy", "slow_pods"]),
    ("pod-worker", &["phase", "restart_requested"]),
    ("pod-workers", &["pods", "workers"]),
    ("prober", &["pods", "probes"]),
    ("replicaset-controller", &["objects", "owned"]),
    ("status-cache", &["pods"]),
    ("status-manager", &["pods", "by_phase"]),
    ("status-writer", &["mirrors"]),
    ("store", &["objects", "open"]),
    ("supervisor", &["children"]),
    ("sync-loop", &["desired", "all_sources_seen", "rejected"]),
    ("taint-eviction", &["pending"]),
];

/// The fields of `state` that a rebuilt actor of `kind` must show again.
fn view(kind: &str, state: &serde_json::Value) -> serde_json::Value {
    let fields = REBUILT
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[][..], |(_, f)| f);
    fields
        .iter()
        .map(|f| (f.to_string(), state[*f].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

async fn actors(agent: &Agent) -> Vec<serde_json::Value> {
    let body = podvisor_debug::client::get(&agent.endpoint, "/debug/actors?limit=5000", None)
        .await
        .expect("the actor list");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["actors"].as_array().unwrap().clone()
}

/// Every container and sandbox of the agent's pods, by id, with its state.
async fn runtime_objects(agent: &Agent) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in agent.runtime_pods().await {
        for s in &p.sandboxes {
            out.insert(s.id.clone(), format!("{:?}", s.state));
        }
        for c in &p.containers {
            out.insert(c.id.clone(), format!("{:?}", c.state));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_any_live_actor_is_healed_within_a_second_and_touches_no_pod() {
    // Every root child crashes within a minute here; past the root's restart intensity
    // (10 in 60 s) the agent would rightly give up and exit for its service manager.
    let dir = std::env::temp_dir().join("podvisor-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join(format!("chaos-{}.sock", std::process::id()));
    let proxy = CriProxy::start(&common::endpoint(), &socket).await.unwrap();
    let mut agent = Agent::start_on(
        "chaos",
        &proxy.endpoint(),
        "",
        "[supervisor]\nmax_restarts = 100\n",
    )
    .await;
    agent.write("s1.yaml", &static_pod("s1"));
    agent.write("s2.yaml", &static_pod("s2"));
    let k = Kubectl::for_agent(&agent);
    k.ok(&[
        "run",
        "api",
        "--image=localhost/podvisor/busybox:test",
        "--restart=Never",
        "--",
        "sh",
        "-c",
        LOOP,
    ]);
    k.apply(REPLICAS);
    common::eventually("five pods running", Duration::from_secs(90), || async {
        let pods = agent.pods().await;
        let running = pods
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        (running == 5).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = runtime_objects(&agent).await;
    let chaos_start = Instant::now();
    // One live actor of every kind, the root supervisor aside.
    let mut targets: BTreeMap<String, String> = BTreeMap::new();
    for a in actors(&agent).await {
        let (id, kind) = (a["id"].as_str().unwrap(), a["kind"].as_str().unwrap());
        let key = if kind == "supervisor" { id } else { kind };
        if a["depth"] != 0 && a["mailbox"]["lifecycle"] == "running" {
            targets
                .entry(key.to_string())
                .or_insert_with(|| id.to_string());
        }
    }
    for kind in [
        "pod-worker",
        "pleg",
        "status-cache",
        "status-manager",
        "sync-loop",
        "prober",
    ] {
        assert!(
            targets.contains_key(kind),
            "no live {kind} among {targets:?}"
        );
    }
    for id in targets.values() {
        let restarts = |all: &[serde_json::Value]| {
            all.iter().find(|a| a["id"] == id.as_str()).map(|a| {
                (
                    a["mailbox"]["restarts"].as_u64().unwrap_or(0),
                    a["mailbox"]["lifecycle"].clone(),
                )
            })
        };
        let (n, _) = restarts(&actors(&agent).await).unwrap();
        let kind = actors(&agent)
            .await
            .into_iter()
            .find(|a| a["id"] == id.as_str())
            .map(|a| a["kind"].as_str().unwrap_or("").to_string())
            .unwrap();
        let seen = view(&kind, &agent.actor_state(id).await);
        let t0 = Instant::now();
        let path = format!("/debug/fault/panic/{id}");
        podvisor_debug::client::post(&agent.endpoint, &path, None)
            .await
            .unwrap_or_else(|e| {
                panic!("{path}: {e} (fault injection needs --all-features, as scripts/test builds)")
            });
        common::eventually(&format!("{id} back"), Duration::from_secs(5), || async {
            let now = restarts(&actors(&agent).await)?;
            (now.0 > n && now.1 == "running").then_some(())
        })
        .await;
        let took = t0.elapsed();
        eprintln!("chaos: {id} back in {took:?}");
        assert!(
            took < Duration::from_secs(1),
            "{id} took {took:?} to come back"
        );
        assert!(agent.alive(), "the agent died after {id} crashed");
        // Level-driven rebuilds: the actor's view of the world is what it was.
        let rebuilt = Instant::now();
        loop {
            let now = view(&kind, &agent.actor_state(id).await);
            if now == seen {
                break;
            }
            assert!(
                rebuilt.elapsed() < Duration::from_secs(5),
                "{id} did not rebuild what it saw: {now} after, {seen} before"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // And stays so: equal at once may only mean the rebuild has not landed yet.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let settled = view(&kind, &agent.actor_state(id).await);
        assert_eq!(settled, seen, "{id}'s view changed after its rebuild");
    }
    // Level-driven rebuilds change nothing in the runtime.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(agent.alive());
    assert_eq!(
        runtime_objects(&agent).await,
        before,
        "no sandbox or container changed"
    );
    let mutations: Vec<_> = proxy
        .calls_since(chaos_start)
        .into_iter()
        .filter(|c| c.is_mutating())
        .map(|c| c.method)
        .collect();
    assert!(
        mutations.is_empty(),
        "rebuilding actors changed the runtime: {mutations:?}"
    );
    let pods = agent.pods().await;
    assert_eq!(pods.len(), 5);
    for p in &pods {
        let s = p.status.as_ref().unwrap();
        assert_eq!(s.phase.as_deref(), Some("Running"), "{:?}", p.metadata.name);
        let restarts: i32 = s
            .container_statuses
            .iter()
            .flatten()
            .map(|c| c.restart_count)
            .sum();
        assert_eq!(restarts, 0, "{:?}", p.metadata.name);
    }
}
