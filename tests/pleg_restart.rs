//! containerd restarted under a running agent: the event stream comes back (where the
//! runtime streams), an exit that happened while containerd was down is reported, and
//! nothing is restarted or recreated. Its own test binary: it stops the shared test
//! containerd (test binaries run one after another).

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::containerd;
use k8s_openapi::api::core::v1::Pod;

fn exit_code(p: &Pod) -> Option<i32> {
    let c = p.status.as_ref()?.container_statuses.as_ref()?.first()?;
    Some(c.state.as_ref()?.terminated.as_ref()?.exit_code)
}

fn running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

#[tokio::test]
async fn containerd_restarted_while_pods_run_loses_no_exit_and_restarts_nothing() {
    let streams = common::runtime_streams_events().await;
    // Where the runtime streams, relisting is slowed to 30 s: the exit must be found by
    // the relist that follows the stream's reopening.
    let a = if streams {
        let top = "relist_period = \"30s\"\n";
        Agent::start_configured("restart", top, "[pleg]\nsafety_relist = \"30s\"\n").await
    } else {
        Agent::start("restart").await
    };
    let gate = a.out_dir().join("gate");
    std::fs::create_dir_all(&gate).unwrap();
    a.write("steady.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: steady\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sleep, \"3600\"]\n");
    a.write("gated.yaml", &format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/podvisor/busybox:test\n    command: [sh, -c, \"until [ -e /gate/open ]; do sleep 0.1; done; exit 4\"]\n    volumeMounts:\n    - {{name: gate, mountPath: /gate}}\n  volumes:\n  - name: gate\n    hostPath: {{path: {}}}\n", gate.display()));
    for name in ["steady", "gated"] {
        a.wait_pod(name, "running", Duration::from_secs(30), running)
            .await;
    }
    let before = a.runtime_pods().await;

    containerd::stop().await;
    std::fs::write(gate.join("open"), "").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await; // it exits while containerd is down
    containerd::start();

    let p = a
        .wait_pod(
            "gated",
            "its exit while containerd was down",
            Duration::from_secs(20),
            |p| exit_code(p).is_some(),
        )
        .await;
    // containerd 1.6 keeps the exit status. containerd 1.7.24 reaps the exited task's shim
    // at start-up ("cleaning leaked shim process") and reports the container as exited
    // with 255 instead: the exit is reported, with the code the runtime has.
    let code = exit_code(&p);
    if streams {
        assert!(matches!(code, Some(4 | 255)), "{:#?}", p.status);
    } else {
        assert_eq!(code, Some(4), "{:#?}", p.status);
    }
    if streams {
        common::eventually("the event stream back", Duration::from_secs(20), || async {
            let s = a.actor_state("pleg").await;
            (s["mode"] == "evented" && s["stream_open"] == true).then_some(())
        })
        .await;
    }
    // Nothing restarted or recreated: no runtime object that was not there before, and
    // the steady pod's all still there (the finished pod's may be cleaned up).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = a.runtime_pods().await;
    let ids = |pods: &[podvisor_cri::Pod]| -> Vec<String> {
        pods.iter()
            .flat_map(|p| {
                let sandboxes = p.sandboxes.iter().map(|s| s.id.clone());
                sandboxes.chain(p.containers.iter().map(|c| c.id.clone()))
            })
            .collect()
    };
    let (before_ids, after_ids) = (ids(&before), ids(&after));
    assert!(
        after_ids.iter().all(|id| before_ids.contains(id)),
        "new runtime objects: {after_ids:?} vs {before_ids:?}"
    );
    let steady_uid = a.static_uid("steady").await.unwrap();
    let steady_before = ids(&before
        .into_iter()
        .filter(|p| p.pod.uid == steady_uid)
        .collect::<Vec<_>>());
    assert!(
        steady_before.iter().all(|id| after_ids.contains(id)),
        "the steady pod's objects are gone"
    );
    let steady = a.pod("steady").await.unwrap();
    let c = &steady.status.unwrap().container_statuses.unwrap()[0];
    assert_eq!(c.restart_count, 0);
    assert!(c.state.as_ref().unwrap().running.is_some(), "{c:?}");
}
