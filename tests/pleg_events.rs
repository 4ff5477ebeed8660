//! The agent's PLEG against containerd as it is: on containerd 1.7 (which streams CRI
//! container events) changes come from the event stream, with relisting slowed to 30 s so
//! a relist cannot be what reports them; on containerd 1.6 (which cannot stream) the agent
//! relists every second. CI runs this file against both; each test asserts the behaviour
//! of the runtime it finds.
//!
//! One agent at a time: containerd 1.7 hands each event to one subscriber only
//! (containerd#7318), so agents running side by side would take each other's events (what
//! the PLEG does about that is tested on the fake runtime). Test binaries run one after
//! another, so within this one, the agent under test is the only subscriber.

mod common;

use std::process::Command;
use std::time::Duration;

use common::agent::Agent;
use k8s_openapi::api::core::v1::Pod;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts an agent; where the runtime streams, relisting is slowed to 30 s.
async fn agent(node: &str) -> (Agent, bool) {
    let streams = common::runtime_streams_events().await;
    let a = if streams {
        let top = "relist_period = \"30s\"\n";
        Agent::start_configured(node, top, "[pleg]\nsafety_relist = \"30s\"\n").await
    } else {
        Agent::start(node).await
    };
    (a, streams)
}

/// Waits until the PLEG is in the mode the runtime allows, with the stream open or not.
async fn expect_mode(a: &Agent, streams: bool) -> serde_json::Value {
    let mode = if streams { "evented" } else { "relist" };
    let limit = Duration::from_secs(5);
    let t0 = std::time::Instant::now();
    loop {
        let s = a.actor_state("pleg").await;
        if s["mode"] == mode && s["stream_open"] == streams {
            eprintln!("{}: pleg {s}", a.node);
            return s;
        }
        assert!(t0.elapsed() < limit, "PLEG not in {mode} mode: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn terminated(p: &Pod, container: &str) -> Option<i32> {
    let cs = p.status.as_ref()?.container_statuses.as_ref()?;
    let c = cs.iter().find(|c| c.name == container)?;
    Some(c.state.as_ref()?.terminated.as_ref()?.exit_code)
}

fn restarts(p: &Pod, container: &str) -> Option<(i32, Option<i32>)> {
    let cs = p.status.as_ref()?.container_statuses.as_ref()?;
    let c = cs.iter().find(|c| c.name == container)?;
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code);
    Some((c.restart_count, last))
}

/// What the runtime itself says of pod `name`'s containers: state and exit code.
async fn runtime_says(a: &Agent, name: &str) -> String {
    use podvisor_cri::Runtime;
    let Some(uid) = a.pod(name).await.and_then(|p| p.metadata.uid) else {
        return "nothing (no such pod)".into();
    };
    match common::runtime().await.pod_status(&uid).await {
        Ok(s) => format!(
            "{:?}",
            s.containers
                .iter()
                .map(|c| (&c.name, c.state, c.exit_code))
                .collect::<Vec<_>>()
        ),
        Err(e) => format!("an error: {e}"),
    }
}

fn pod(name: &str, restart: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  restartPolicy: {restart}\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"{script}\"]\n"
    )
}

#[tokio::test]
async fn an_exit_code_reaches_the_api_from_the_event_stream() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (a, streams) = agent("evexit").await;
    expect_mode(&a, streams).await;
    a.write("exit7.yaml", &pod("exit7", "Never", "sleep 2; exit 7"));
    // Where the runtime streams, 15 s is well inside the 30 s relist: only the stream
    // can report it; on 1.6 the 1 s relist does.
    let p = a
        .wait_pod_or("exit7", Duration::from_secs(15), |p| {
            terminated(p, "main").is_some()
        })
        .await;
    let Some(p) = p else {
        // Tell a lost event from a runtime that had not seen the exit either.
        panic!(
            "exit7 not terminated after 15 s; containerd says {}; pleg {}\n{}",
            runtime_says(&a, "exit7").await,
            a.actor_state("pleg").await,
            a.log_tail(60)
        );
    };
    assert_eq!(terminated(&p, "main"), Some(7));
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Failed"));
    let s = expect_mode(&a, streams).await;
    if streams {
        assert!(s["events_received"].as_u64().unwrap() >= 3, "{s}");
        // The exit came with the pod's statuses (one ready sandbox): no inspection.
        assert!(s["events_from_snapshots"].as_u64().unwrap() >= 1, "{s}");
    }
}

#[tokio::test]
async fn a_container_killed_from_outside_is_seen_and_restarted() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (a, streams) = agent("evkill").await;
    expect_mode(&a, streams).await;
    a.write("victim.yaml", &pod("victim", "Always", "sleep 3600"));
    a.wait_pod("victim", "running", Duration::from_secs(20), |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let uid = a.static_uid("victim").await.unwrap();
    let id = a
        .runtime_pods()
        .await
        .into_iter()
        .find(|p| p.pod.uid == uid)
        .and_then(|p| p.containers.first().map(|c| c.id.clone()))
        .expect("the victim's container");
    // SIGKILL through containerd's own CLI, past podvisor.
    let sock = common::endpoint().trim_start_matches("unix://").to_string();
    let killed = Command::new("ctr")
        .args([
            "-a", &sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", &id,
        ])
        .status()
        .unwrap();
    assert!(killed.success());
    let p = a
        .wait_pod("victim", "restarted once", Duration::from_secs(15), |p| {
            restarts(p, "main").is_some_and(|(n, _)| n >= 1)
        })
        .await;
    assert_eq!(restarts(&p, "main"), Some((1, Some(137))));
}

#[tokio::test]
async fn pods_another_agent_owns_are_neither_tracked_nor_inspected() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (a, streams) = agent("evmine").await;
    let rt = common::runtime().await;
    a.write("mine.yaml", &pod("mine", "Always", "sleep 3600"));
    a.wait_pod("mine", "running", Duration::from_secs(20), |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    // A pod made through CRI directly, with no podvisor owner, whose container exits.
    let uid = common::unique_uid("foreign");
    let dir = common::log_dir(&uid);
    let sandbox =
        podvisor_cri::sample::sandbox_config(&uid, "foreign", true, dir.to_str().unwrap());
    let result = async {
        use podvisor_cri::Runtime;
        let sandbox_id = rt.run_sandbox(&sandbox).await.unwrap();
        let config =
            podvisor_cri::sample::container_config(&sandbox, "x", &["/bin/sh", "-c", "exit 1"]);
        let id = rt
            .create_container(&sandbox_id, &config, &sandbox)
            .await
            .unwrap();
        rt.start_container(&id).await.unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let s = expect_mode(&a, streams).await;
        assert_eq!(s["pods_tracked"], 1, "only its own pod: {s}");
        if streams {
            // Its events arrive (all, or the part containerd#7318 leaves this subscriber)
            // and are counted as ignored.
            assert!(s["events_ignored"].as_u64().unwrap() >= 1, "{s}");
        }
    };
    let outcome = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(result)).await;
    common::remove_pod(&rt, &uid).await;
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// containerd 1.7 hands each event to one subscriber only (containerd#7318): with another
/// subscriber draining the stream (as `crictl events` would), the agent misses events.
/// It must notice (the stream marked lossy, `events_lost` counted) and still report every
/// exit, through relisting. containerd 2.x broadcasts (containerd#9661): nothing is lost and
/// the stream stays trusted. On containerd 1.6 the other subscription is refused and the
/// agent relists as always.
#[tokio::test]
async fn a_stream_shared_with_another_subscriber_is_noticed_and_no_exit_is_missed() {
    use futures_util::StreamExt;
    let _alone = ONE_AT_A_TIME.lock().await;
    let rt = common::runtime().await;
    let mut other = podvisor_cri::Runtime::container_events(&rt).await.unwrap();
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = taken.clone();
    let drain = tokio::spawn(async move {
        while let Some(Ok(_)) = other.next().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let (a, streams) = agent("evshare").await;
    expect_mode(&a, streams).await;
    tokio::time::sleep(Duration::from_secs(2)).await; // the agent's subscription is live
    for i in 0..4 {
        let name = format!("share{i}");
        let script = format!("sleep 2; exit {}", 10 + i);
        a.write(&format!("{name}.yaml"), &pod(&name, "Never", &script));
    }
    for i in 0..4 {
        // A lost exit is found by the relist (every 30 s here where the runtime streams).
        let p = a
            .wait_pod(
                &format!("share{i}"),
                "its exit",
                Duration::from_secs(50),
                |p| terminated(p, "main").is_some(),
            )
            .await;
        assert_eq!(terminated(&p, "main"), Some(10 + i));
    }
    let s = a.actor_state("pleg").await;
    eprintln!("{}: pleg {s}", a.node);
    let version = common::runtime_version().await;
    if streams && version.starts_with("1.7.") {
        assert!(
            taken.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the other subscriber took events"
        );
        assert!(s["events_lost"].as_u64().unwrap() >= 1, "{s}");
        assert_eq!(s["stream_lossy"], true, "{s}");
        assert_eq!(s["stream_open"], true, "still consumed: {s}");
    } else if streams {
        // containerd 2.x broadcasts: the other subscriber takes nothing from the agent.
        assert!(
            taken.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the other subscriber saw events too"
        );
        assert_eq!(s["events_lost"], 0, "containerd {version} broadcasts: {s}");
        assert_eq!(s["stream_lossy"], false, "{s}");
    } else {
        assert_eq!(s["mode"], "relist", "{s}");
    }
    drain.abort();
}
