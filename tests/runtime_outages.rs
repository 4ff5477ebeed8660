//! containerd itself going away under a running agent (issue 17's reliability harness):
//! restarted six times, 20 s apart, under twenty pods, and down while pods terminate. Its
//! own test binary: it stops the shared test containerd (test binaries run one after
//! another, so no other test sees the outages).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::agent::Agent;
use common::containerd;
use common::kubectl::Kubectl;
use k8s_openapi::api::core::v1::Pod;

/// The tests here stop the runtime every other test in the binary uses: one at a time.
static OUTAGE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const LOOP: &str = "trap 'exit 0' TERM; while true; do sleep 0.5; done";

fn pod(name: &str, grace: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: {grace}\n  containers:\n  - {{name: c, image: localhost/podvisor/busybox:test, command: [sh, -c, \"{LOOP}\"]}}\n"
    )
}

fn running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn restarts(p: &Pod) -> i32 {
    let statuses = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    statuses.map_or(0, |cs| cs.iter().map(|c| c.restart_count).sum())
}

/// Every sandbox and container of the agent's pods.
async fn runtime_ids(agent: &Agent) -> BTreeSet<String> {
    let pods = agent.runtime_pods().await;
    let sandboxes = pods
        .iter()
        .flat_map(|p| p.sandboxes.iter().map(|s| s.id.clone()));
    let containers = pods
        .iter()
        .flat_map(|p| p.containers.iter().map(|c| c.id.clone()));
    sandboxes.chain(containers).collect()
}

/// Waits until the agent's PLEG has listed the runtime successfully after `since_ms`
/// (and, where the runtime streams, has its event stream open again).
async fn reconnected(agent: &Agent, since_ms: u64, streams: bool) -> Duration {
    let t0 = Instant::now();
    common::eventually(
        "the agent back on the runtime",
        Duration::from_secs(10),
        || async {
            let s = agent.actor_state("pleg").await;
            let relisted = s["last_relist_unix_ms"]
                .as_u64()
                .is_some_and(|t| t > since_ms);
            (relisted && (!streams || s["stream_open"] == true)).then_some(())
        },
    )
    .await;
    t0.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containerd_restarted_six_times_under_twenty_pods_restarts_nothing() {
    let _one_at_a_time = OUTAGE.lock().await;
    let streams = common::runtime_streams_events().await;
    let mut agent = Agent::start("outages").await;
    for i in 0..20 {
        agent.write(&format!("p{i}.yaml"), &pod(&format!("p{i}"), 2));
    }
    common::eventually("twenty pods running", Duration::from_secs(120), || async {
        let pods = agent.pods().await;
        (pods.iter().filter(|p| running(p)).count() == 20).then_some(())
    })
    .await;
    let before = runtime_ids(&agent).await;
    assert_eq!(before.len(), 40, "a sandbox and a container per pod");
    for round in 1..=6 {
        let round_start = Instant::now();
        containerd::stop().await;
        containerd::start();
        let since = podvisor_core::time::now_unix_ms();
        let took = reconnected(&agent, since, streams).await;
        eprintln!("outages: round {round}: the agent was back {took:?} after containerd");
        assert!(agent.alive(), "the agent died in round {round}");
        if round < 6 {
            tokio::time::sleep(Duration::from_secs(20).saturating_sub(round_start.elapsed())).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        runtime_ids(&agent).await,
        before,
        "the same sandboxes and containers, none recreated"
    );
    let pods = agent.pods().await;
    assert_eq!(pods.iter().filter(|p| running(p)).count(), 20);
    assert!(
        pods.iter().all(|p| restarts(p) == 0),
        "a container was restarted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_deleted_while_containerd_is_down_are_gone_soon_after_it_returns() {
    const GRACE: u64 = 5;
    let _one_at_a_time = OUTAGE.lock().await;
    let agent = Agent::start("down-delete").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&pod("api-victim", GRACE as u32));
    agent.write("victim.yaml", &pod("file-victim", GRACE as u32));
    agent.write("bystander.yaml", &pod("bystander", GRACE as u32));
    common::eventually("three pods running", Duration::from_secs(60), || async {
        let pods = agent.pods().await;
        (pods.iter().filter(|p| running(p)).count() == 3).then_some(())
    })
    .await;
    let file_uid = agent.static_uid("file-victim").await.unwrap();
    let api_uid = k.jsonpath(&["pod", "api-victim"], "{.metadata.uid}");
    let bystander = agent.static_uid("bystander").await.unwrap();
    let bystander_ids: BTreeSet<String> = runtime_ids(&agent).await;

    containerd::stop().await;
    k.ok(&["delete", "pod", "api-victim", "--wait=false"]);
    agent.remove("victim.yaml");
    tokio::time::sleep(Duration::from_secs(5)).await; // the agent tries, and fails
    containerd::start();
    let back = Instant::now();
    common::eventually(
        "both victims gone from the runtime and the API",
        Duration::from_secs(GRACE + 10),
        || async {
            let left: Vec<_> = agent
                .runtime_pods()
                .await
                .into_iter()
                .filter(|p| p.pod.uid == file_uid || p.pod.uid == api_uid)
                .collect();
            let api_gone = k
                .run(&["get", "pod", "api-victim"])
                .stderr
                .contains("NotFound");
            (left.is_empty() && api_gone && agent.pod("file-victim").await.is_none()).then_some(())
        },
    )
    .await;
    eprintln!(
        "down-delete: gone {:?} after containerd returned",
        back.elapsed()
    );
    // Nothing left behind: the pods' directories and logs are gone with them.
    for uid in [&file_uid, &api_uid] {
        let pod_dir = agent.state_dir().join("pods").join(uid);
        common::eventually(
            "the pod's directory removed",
            Duration::from_secs(10),
            || async { (!pod_dir.exists()).then_some(()) },
        )
        .await;
        let logs = std::fs::read_dir(agent.dir.join("logs")).unwrap();
        assert!(
            !logs
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains(uid.as_str())),
            "a log directory of {uid} is left"
        );
    }
    // The bystander was not touched.
    let now = runtime_ids(&agent).await;
    let bystander_now = agent
        .runtime_pods()
        .await
        .into_iter()
        .find(|p| p.pod.uid == bystander)
        .expect("the bystander still runs");
    assert!(
        bystander_now
            .containers
            .iter()
            .all(|c| bystander_ids.contains(&c.id))
    );
    assert!(now.iter().all(|id| bystander_ids.contains(id)));
}
