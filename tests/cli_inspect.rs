//! `podvisor inspect mailboxes` against a live process's debug endpoint.

use std::process::Command;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{
    ChildSpec, Registry, StartInfo, SupervisedActor, SupervisorConfig, start_root,
};
use podvisor_debug::{DebugConfig, DebugServer, Health};

#[derive(Default)]
struct Busy {
    seen: u64,
}

impl Actor for Busy {
    type Context = Context<Self>;
}

impl SupervisedActor for Busy {
    const KIND: &'static str = "busy";
    type Summary = u64;
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) -> u64 {
        self.seen
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Work;

impl Handler<Work> for Busy {
    type Result = ();
    fn handle(&mut self, _: Work, _: &mut Context<Self>) {
        self.seen += 1;
    }
}

fn inspect(endpoint: &str, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_podvisor"))
        .args(["inspect", "mailboxes", "--endpoint", endpoint])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn prints_the_actor_table_of_a_running_process() {
    System::new().block_on(async {
        let registry = Registry::new();
        let (w, spec) = ChildSpec::of(Busy::default)
            .key("u-123")
            .capacity(8)
            .build();
        start_root(
            "root",
            SupervisorConfig::default(),
            registry.clone(),
            vec![spec],
            |_| {},
        );
        for _ in 0..5 {
            w.send(Work).await.unwrap();
        }
        let server = DebugServer::start(
            DebugConfig {
                address: "127.0.0.1:0".parse().unwrap(),
                ..Default::default()
            },
            registry,
            Health::new(),
        )
        .unwrap();
        let endpoint = format!("http://{}", server.address());
        // The CLI runs as its own process; poll it without blocking the actors' thread.
        let e = endpoint.clone();
        let child = std::thread::spawn(move || inspect(&e, &[]));
        while !child.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let out = child.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            lines[0].starts_with("ACTOR")
                && lines[0].contains("P99")
                && lines[0].contains("RESTARTS")
        );
        assert!(lines[1].starts_with("supervisor/root"), "{stdout}");
        let row = lines
            .iter()
            .find(|l| l.contains("busy/u-123"))
            .expect("worker row");
        assert!(
            row.starts_with("  busy/u-123"),
            "indented under root: {row}"
        );
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cols[1..6], ["busy", "u-123", "0/8", "-", "5"], "{row}");
        assert!(row.ends_with("running 5"), "{row}");
        server.stop().await;
    });
}

#[test]
fn an_unreachable_endpoint_is_one_clear_line() {
    let out = inspect("http://127.0.0.1:1", &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("podvisor: cannot reach http://127.0.0.1:1: "),
        "{stderr}"
    );
}
