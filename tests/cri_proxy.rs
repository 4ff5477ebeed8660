//! The fault-injecting CRI proxy (crates/podvisor-cri-proxy) against containerd: what it
//! forwards is what the runtime says, and each fault does to a real client what it claims.

mod common;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use podvisor_cri::proto::ContainerEventResponse;
use podvisor_cri::{CriError, CriRuntime, Runtime, Timeouts, sample};
use podvisor_cri_proxy::{Action, CriProxy, Fault, Outcome};

async fn proxy(name: &str) -> (CriProxy, CriRuntime) {
    common::runtime().await;
    let dir = std::env::temp_dir().join("podvisor-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join(format!("{name}-{}.sock", std::process::id()));
    let proxy = CriProxy::start(&common::endpoint(), &socket)
        .await
        .expect("the proxy starts");
    let client = CriRuntime::new(
        &proxy.endpoint(),
        Timeouts {
            call: Duration::from_secs(2),
            ..Timeouts::default()
        },
    )
    .unwrap();
    (proxy, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_forwarded_as_the_runtime_answers_them_and_recorded() {
    let (proxy, via) = proxy("forward").await;
    let direct = common::runtime().await;
    let t0 = Instant::now();
    assert_eq!(
        via.version().await.unwrap(),
        direct.version().await.unwrap()
    );
    let a = via.list_pods().await.unwrap().len();
    let b = direct.list_pods().await.unwrap().len();
    assert!(a.abs_diff(b) <= 2, "listings differ: {a} vs {b} pods");
    // A runtime error passes through unchanged.
    let missing = via.container_status("no-such-container").await;
    assert!(
        matches!(missing, Err(CriError::NotFound { .. })),
        "{missing:?}"
    );
    let calls = proxy.calls_since(t0);
    let methods: Vec<_> = calls.iter().map(|c| c.method.as_str()).collect();
    assert!(methods.contains(&"Version") && methods.contains(&"ListContainers"));
    assert!(calls.iter().all(|c| c.outcome == Outcome::Forwarded));
    assert!(!calls.iter().any(|c| c.is_mutating()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_hanging_and_delaying_faults_reach_the_client() {
    let (proxy, via) = proxy("faults").await;
    proxy.add(Fault::on("Version", Action::unavailable()).times(1));
    assert!(matches!(
        via.version().await,
        Err(CriError::Unreachable { .. })
    ));
    via.version().await.expect("the fault was used up");

    let hang = proxy.add(Fault::on("Status", Action::Hang));
    let t0 = Instant::now();
    assert!(matches!(
        via.conditions().await,
        Err(CriError::Timeout { .. })
    ));
    assert!(t0.elapsed() >= Duration::from_secs(2));
    proxy.remove(hang);
    via.conditions().await.expect("no fault any more");

    proxy.add(Fault::on(
        "Status",
        Action::Delay(Duration::from_millis(300)),
    ));
    let t0 = Instant::now();
    via.conditions().await.unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(300));
    proxy.clear();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_answer_leaves_the_work_done_in_the_runtime() {
    let (proxy, via) = proxy("drop").await;
    let direct = common::runtime().await;
    let uid = common::unique_uid("proxy-drop");
    let log_dir = common::log_dir(&uid);
    let config = sample::sandbox_config(&uid, "dropped", true, log_dir.to_str().unwrap());
    proxy.add(Fault::on("RunPodSandbox", Action::Drop).about(&uid));
    let outcome = via.run_sandbox(&config).await;
    assert!(
        matches!(outcome, Err(CriError::Timeout { .. })),
        "{outcome:?}"
    );
    let made = direct.pod_status(&uid).await.unwrap();
    common::remove_pod(&direct, &uid).await;
    assert_eq!(made.sandboxes.len(), 1, "the runtime made the sandbox");
    let calls = proxy.calls_since(Instant::now() - Duration::from_secs(60));
    assert!(
        calls.iter().any(|c| c.method == "RunPodSandbox"
            && c.outcome == Outcome::Dropped
            && c.mentions(&uid))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_event_stream_carries_what_the_test_injects() {
    let (proxy, via) = proxy("events").await;
    proxy.add(Fault::on("GetContainerEvents", Action::ServeEvents));
    let mut stream = via.container_events().await.unwrap();
    let first = tokio::spawn(async move {
        let mut seen = Vec::new();
        while seen.len() < 3 {
            match stream.next().await {
                Some(Ok(e)) => seen.push(e.container_id),
                other => panic!("the stream ended: {other:?}"),
            }
        }
        seen
    });
    common::eventually("the stream is open", Duration::from_secs(5), || async {
        (proxy.event_streams() == 1).then_some(())
    })
    .await;
    let events: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| ContainerEventResponse {
            container_id: id.to_string(),
            container_event_type: 1,
            created_at: 1,
            ..Default::default()
        })
        .collect();
    assert_eq!(proxy.inject_events(&events), 1);
    let seen = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("the events arrive")
        .unwrap();
    assert_eq!(seen, ["a", "b", "c"]);
}
