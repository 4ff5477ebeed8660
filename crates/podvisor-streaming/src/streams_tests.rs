use std::sync::Arc;

use podvisor_cri::sample::{container_config, sandbox_config};
use podvisor_cri::{FakeRuntime, Runtime};

use super::*;
use crate::session::Verb;

async fn pod_with(fake: &FakeRuntime, uid: &str, names: &[&str]) -> (String, Vec<String>) {
    let sb_cfg = sandbox_config(uid, "web", false, "/logs");
    let sb = fake.run_sandbox(&sb_cfg).await.unwrap();
    let mut ids = Vec::new();
    for name in names {
        let cfg = container_config(&sb_cfg, name, &["sleep"]);
        let id = fake.create_container(&sb, &cfg, &sb_cfg).await.unwrap();
        fake.start_container(&id).await.unwrap();
        ids.push(id);
    }
    (sb, ids)
}

fn web(uid: &str) -> PodTarget {
    PodTarget {
        namespace: "default".into(),
        name: "web".into(),
        uid: uid.into(),
    }
}

fn streams(fake: &FakeRuntime, max: usize) -> Streams {
    let limits = StreamLimits {
        max_sessions: max,
        ..StreamLimits::default()
    };
    Streams::new(Arc::new(fake.clone()) as Arc<dyn Runtime>, limits)
}

#[tokio::test]
async fn exec_and_attach_go_to_the_named_running_container() {
    let fake = FakeRuntime::new();
    let (_, ids) = pod_with(&fake, "u1", &["app", "side"]).await;
    let s = streams(&fake, 4);
    let exec = Session::parse(Verb::Exec, "command=ls&stdout=1&container=side").unwrap();
    let url = s.url(&web("u1"), &exec).await.unwrap();
    assert_eq!(url, format!("http://fake.invalid/exec/{}", ids[1]));
    let attach = Session::parse(Verb::Attach, "stdout=1&container=app").unwrap();
    let url = s.url(&web("u1"), &attach).await.unwrap();
    assert_eq!(url, format!("http://fake.invalid/attach/{}", ids[0]));
}

#[tokio::test]
async fn port_forward_goes_to_the_ready_sandbox() {
    let fake = FakeRuntime::new();
    let (sb, _) = pod_with(&fake, "u1", &["app"]).await;
    let s = streams(&fake, 4);
    let pf = Session::parse(Verb::PortForward, "ports=80").unwrap();
    let url = s.url(&web("u1"), &pf).await.unwrap();
    assert_eq!(url, format!("http://fake.invalid/portforward/{sb}"));
    fake.stop_sandbox(&sb).await.unwrap();
    let err = s.url(&web("u1"), &pf).await.unwrap_err();
    assert_eq!(err.code(), 404, "{err}");
}

#[tokio::test]
async fn an_exited_or_unknown_container_is_not_found() {
    let fake = FakeRuntime::new();
    let (_, ids) = pod_with(&fake, "u1", &["app"]).await;
    fake.exit_container(&ids[0], 0);
    let s = streams(&fake, 4);
    let exec = Session::parse(Verb::Exec, "command=ls&stdout=1&container=app").unwrap();
    let err = s.url(&web("u1"), &exec).await.unwrap_err();
    assert_eq!(err.code(), 404, "{err}");
    let other = exec.with_container("nope");
    assert!(
        s.url(&web("u1"), &other)
            .await
            .unwrap_err()
            .to_string()
            .contains("nope")
    );
}

#[tokio::test]
async fn sessions_beyond_the_limit_are_refused_until_one_ends() {
    let fake = FakeRuntime::new();
    let s = streams(&fake, 2);
    let a = s.admit().unwrap();
    let _b = s.admit().unwrap();
    let err = s.admit().unwrap_err();
    assert_eq!(err.code(), 429, "{err}");
    drop(a);
    assert!(s.admit().is_ok());
}

#[tokio::test]
async fn a_mirror_pods_uid_finds_the_static_pod_by_name() {
    let fake = FakeRuntime::new();
    let (_, ids) = pod_with(&fake, "static-uid", &["app"]).await;
    let s = streams(&fake, 4);
    let exec = Session::parse(Verb::Exec, "command=ls&stdout=1&container=app").unwrap();
    let url = s.url(&web("mirror-uid"), &exec).await.unwrap();
    assert_eq!(url, format!("http://fake.invalid/exec/{}", ids[0]));
    let mut other = web("mirror-uid");
    other.name = "elsewhere".into();
    assert_eq!(s.url(&other, &exec).await.unwrap_err().code(), 404);
}

#[tokio::test]
async fn a_uid_the_runtime_knows_is_inspected_alone_without_a_listing() {
    use podvisor_cri::fake::Op;
    let fake = FakeRuntime::new();
    pod_with(&fake, "u1", &["app"]).await;
    let s = streams(&fake, 4);
    let exec = Session::parse(Verb::Exec, "command=ls&stdout=1&container=app").unwrap();
    fake.clear_calls();
    s.url(&web("u1"), &exec).await.unwrap();
    assert!(
        fake.calls_of(Op::ListPods).is_empty(),
        "no listing for a known UID"
    );
    assert_eq!(fake.calls_of(Op::PodStatus).len(), 1, "one inspection");
    fake.clear_calls();
    s.url(&web("mirror-uid"), &exec).await.unwrap();
    assert_eq!(
        fake.calls_of(Op::ListPods).len(),
        1,
        "a mirror's UID needs the listing"
    );
}
