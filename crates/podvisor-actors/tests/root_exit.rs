//! At the root, escalation must end the process with a non-zero code. Tested by running
//! this test binary again as a child process that does exactly that.

mod support;

use std::process::Command;
use std::time::Duration;

use podvisor_actors::supervisor::{Backoff, Escalation, Intensity};
use podvisor_actors::{ChildSpec, Registry, Strategy, SupervisorConfig, start_root};
use support::*;

const CHILD_ENV: &str = "PODVISOR_ROOT_EXIT_CHILD";

#[test]
fn root_escalation_exits_the_process_non_zero() {
    if std::env::var_os(CHILD_ENV).is_some() {
        crash_loop_at_the_root();
        unreachable!("the process should have exited");
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "root_escalation_exits_the_process_non_zero",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "stderr:\n{stderr}");
    assert!(
        stderr.contains("podvisor: root supervisor gave up"),
        "{stderr}"
    );
    assert!(stderr.contains("restart intensity exceeded"), "{stderr}");
}

fn crash_loop_at_the_root() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let j = journal.clone();
        let (w, spec) = ChildSpec::of(move || Worker::new("w", &j)).key("w").build();
        let config = SupervisorConfig {
            strategy: Strategy::OneForOne,
            backoff: Backoff::default(),
            intensity: Intensity {
                max_restarts: 2,
                within: Duration::from_secs(60),
            },
            ..SupervisorConfig::default()
        };
        start_root(
            "root",
            config,
            Registry::new(),
            vec![spec],
            Escalation::exit_process,
        );
        loop {
            w.do_send(Crash::InHandler);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
