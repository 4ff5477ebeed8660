use std::time::Duration;

use futures_util::StreamExt;

use super::*;
use crate::sample::{container_config, sandbox_config};

fn pod(fake: &FakeRuntime, uid: &str) -> PodSandboxConfig {
    let _ = fake;
    sandbox_config(uid, "web", false, "/logs")
}

#[tokio::test(start_paused = true)]
async fn containers_follow_their_program_and_exit_on_time() {
    let fake = FakeRuntime::new();
    fake.set_program("job", Program::exits_after(Duration::from_secs(5), 7));
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let cfg = container_config(&sb_cfg, "job", &["true"]);
    let id = fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
    assert_eq!(
        fake.container_status(&id).await.unwrap().state,
        ContainerState::Created
    );
    fake.start_container(&id).await.unwrap();
    assert_eq!(
        fake.container_status(&id).await.unwrap().state,
        ContainerState::Running
    );

    tokio::time::sleep(Duration::from_millis(4_900)).await;
    assert_eq!(
        fake.container_status(&id).await.unwrap().state,
        ContainerState::Running
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = fake.container_status(&id).await.unwrap();
    assert_eq!((s.state, s.exit_code), (ContainerState::Exited, 7));
    assert_eq!(s.log_path, "/logs/job/0.log");
    let status = fake.pod_status("u1").await.unwrap();
    assert_eq!(status.ips.len(), 1);
    assert_eq!(status.container("job").unwrap().exit_code, 7);
}

#[tokio::test(start_paused = true)]
async fn stop_sends_sigterm_or_waits_out_the_grace_period() {
    let fake = FakeRuntime::new();
    fake.set_program("stubborn", Program::runs_forever().ignoring_sigterm());
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let polite = fake
        .create_container(&sb, &container_config(&sb_cfg, "polite", &[]), &sb_cfg)
        .await
        .unwrap();
    let stubborn = fake
        .create_container(&sb, &container_config(&sb_cfg, "stubborn", &[]), &sb_cfg)
        .await
        .unwrap();
    fake.start_container(&polite).await.unwrap();
    fake.start_container(&stubborn).await.unwrap();

    let t0 = Instant::now();
    fake.stop_container(&polite, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(
        fake.container_status(&polite).await.unwrap().exit_code,
        SIGTERM_EXIT
    );

    fake.stop_container(&stubborn, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    assert_eq!(
        fake.container_status(&stubborn).await.unwrap().exit_code,
        SIGKILL_EXIT
    );
}

#[tokio::test]
async fn names_are_reserved_until_removed_like_containerd() {
    let fake = FakeRuntime::new();
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let err = fake.run_sandbox(&sb_cfg).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    let cfg = container_config(&sb_cfg, "app", &[]);
    let id = fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
    let err = fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    fake.remove_container(&id).await.unwrap();
    fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
    fake.stop_sandbox(&sb).await.unwrap();
    fake.remove_sandbox(&sb).await.unwrap();
    assert!(fake.list_pods().await.unwrap().is_empty());
    fake.run_sandbox(&sb_cfg).await.unwrap();
}

#[tokio::test]
async fn stopping_a_sandbox_kills_its_containers_and_blocks_new_ones() {
    let fake = FakeRuntime::new();
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let id = fake
        .create_container(&sb, &container_config(&sb_cfg, "app", &[]), &sb_cfg)
        .await
        .unwrap();
    fake.start_container(&id).await.unwrap();
    fake.stop_sandbox(&sb).await.unwrap();
    let pods = fake.list_pods().await.unwrap();
    assert_eq!(pods[0].sandboxes[0].state, SandboxState::NotReady);
    assert_eq!(pods[0].containers[0].state, ContainerState::Exited);
    let err = fake
        .create_container(&sb, &container_config(&sb_cfg, "late", &[]), &sb_cfg)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not ready"), "{err}");
}

#[tokio::test]
async fn missing_images_fail_creation_and_pulls_need_permission() {
    let fake = FakeRuntime::new();
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let mut cfg = container_config(&sb_cfg, "app", &[]);
    cfg.image.as_mut().unwrap().image = "example.com/app:1".into();
    assert!(
        fake.create_container(&sb, &cfg, &sb_cfg)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(fake.image_status("example.com/app:1").await.unwrap(), None);
    assert!(
        fake.pull_image("example.com/app:1", None, None)
            .await
            .is_err()
    );
    fake.allow_pull("example.com/app:1");
    fake.pull_image("example.com/app:1", None, None)
        .await
        .unwrap();
    fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn injected_failures_and_delays_apply_to_the_named_call_only() {
    let fake = FakeRuntime::new();
    fake.fail_next(Op::ListPods, CriError::failed("ListPodSandbox", "boom"));
    fake.set_delay(Op::Version, Duration::from_secs(2));
    assert!(fake.list_pods().await.is_err());
    assert!(fake.list_pods().await.is_ok(), "only the next call fails");
    let t0 = Instant::now();
    fake.version().await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
    assert_eq!(fake.calls_of(Op::ListPods).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn event_stream_reports_lifecycle_when_enabled() {
    let plain = FakeRuntime::new();
    assert!(matches!(
        plain.container_events().await,
        Err(CriError::Unimplemented { .. })
    ));

    let fake = FakeRuntime::new().with_event_stream();
    let mut events = fake.container_events().await.unwrap();
    fake.set_program("job", Program::exits_after(Duration::from_secs(1), 0));
    let sb_cfg = pod(&fake, "u1");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let id = fake
        .create_container(&sb, &container_config(&sb_cfg, "job", &[]), &sb_cfg)
        .await
        .unwrap();
    fake.start_container(&id).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    fake.remove_container(&id).await.unwrap();
    let mut kinds = Vec::new();
    for _ in 0..4 {
        let e = events.next().await.unwrap().unwrap();
        assert_eq!(e.container_id, id);
        assert_eq!(e.pod.as_ref().unwrap().uid, "u1");
        kinds.push(e.kind);
    }
    use ContainerEventKind::*;
    assert_eq!(kinds, [Created, Started, Stopped, Deleted]);
}
