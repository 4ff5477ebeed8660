//! A small live actor tree behind the debug endpoint, for trying `/debug`, the JSON and
//! `podvisor inspect mailboxes` without a containerd:
//!
//!     cargo run -p podvisor-debug --example debug_demo -- 127.0.0.1:9740
//!
//! One actor is kept busy, one crashes every few seconds (and is restarted), and a
//! sub-supervisor holds a few workers.

use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{
    ChildSpec, Registry, StartChild, StartInfo, SupervisedActor, Supervisor, SupervisorConfig,
    start_root,
};
use podvisor_debug::{DebugConfig, DebugServer, Health};

#[derive(Default)]
struct Demo {
    handled: u64,
}

impl Actor for Demo {
    type Context = Context<Self>;
}

impl SupervisedActor for Demo {
    const KIND: &'static str = "demo";
    type Summary = u64;
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) -> u64 {
        self.handled
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Work(Duration);

impl Handler<Work> for Demo {
    type Result = ();
    fn handle(&mut self, Work(d): Work, _: &mut Context<Self>) {
        std::thread::sleep(d);
        self.handled += 1;
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Crash;

impl Handler<Crash> for Demo {
    type Result = ();
    fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("demo crash after {} messages", self.handled);
    }
}

fn main() {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9740".into());
    System::new().block_on(async move {
        let registry = Registry::new();
        let (busy, busy_spec) = ChildSpec::of(Demo::default)
            .key("busy")
            .capacity(64)
            .build();
        let (flaky, flaky_spec) = ChildSpec::of(Demo::default).key("flaky").build();
        let (workers, workers_spec) = Supervisor::spec(
            "workers",
            SupervisorConfig::default(),
            registry.clone(),
            vec![],
        );
        start_root(
            "root",
            SupervisorConfig::default(),
            registry.clone(),
            vec![busy_spec, flaky_spec, workers_spec],
            |e| e.exit_process(),
        );
        let mut pods = Vec::new();
        for i in 0..5 {
            let (w, spec) = ChildSpec::of(Demo::default)
                .key(format!("pod-{i}"))
                .capacity(16)
                .build();
            workers.send(StartChild(spec)).await.unwrap();
            pods.push(w);
        }
        let server = DebugServer::start(
            DebugConfig {
                address: address.parse().expect("address like 127.0.0.1:9740"),
                ..Default::default()
            },
            registry,
            Health::new(),
        )
        .expect("debug endpoint");
        println!("debug endpoint on http://{}/debug", server.address());
        let mut tick = 0u64;
        loop {
            tick += 1;
            for _ in 0..8 {
                busy.do_send(Work(Duration::from_millis(20)));
            }
            flaky.do_send(Work(Duration::from_millis(1)));
            if tick.is_multiple_of(20) {
                flaky.do_send(Crash);
            }
            pods[(tick % 5) as usize].do_send(Work(Duration::from_micros(300)));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}
