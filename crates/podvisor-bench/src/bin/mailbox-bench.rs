//! Mailbox overhead: messages per second through podvisor's instrumented `ActorRef` vs a
//! bare actix `Addr`, in the same run and alternating rounds, and heap bytes per idle
//! actor for both.
//!
//! cargo run --release -p podvisor-bench --bin mailbox-bench

use std::time::{Duration, Instant};

use actix::prelude::*;
use clap::Parser;
use podvisor_actors::{
    ActorRef, ChildSpec, Registry, StartInfo, SupervisedActor, SupervisorConfig,
};
use podvisor_bench::alloc::{Counting, live_bytes};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Parser)]
struct Args {
    /// Messages per fire-and-forget round.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Request/response round trips per round.
    #[arg(long, default_value_t = 200_000)]
    requests: u64,
    /// Rounds per variant (alternating); medians are reported.
    #[arg(long, default_value_t = 7, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    rounds: usize,
    /// Idle actors started for the memory figure.
    #[arg(long, default_value_t = 10_000)]
    idle: usize,
}

#[derive(Default)]
struct Counter(u64);

impl Actor for Counter {
    type Context = Context<Self>;
}

impl SupervisedActor for Counter {
    const KIND: &'static str = "counter";
    type Summary = ();
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) {}
}

#[derive(Message)]
#[rtype(result = "()")]
struct Inc;

#[derive(Message)]
#[rtype(result = "u64")]
struct Get;

impl Handler<Inc> for Counter {
    type Result = ();
    fn handle(&mut self, _: Inc, _: &mut Context<Self>) {
        self.0 += 1;
    }
}

impl Handler<Get> for Counter {
    type Result = u64;
    fn handle(&mut self, _: Get, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bursts of `BURST` fire-and-forget messages, each followed by one request that returns
/// once the burst is handled: queues stay within the default mailbox capacity, as they
/// would in the agent.
const BURST: u64 = 1000;

async fn bare_do_send(n: u64) -> Duration {
    let addr = Counter::default().start();
    let t0 = Instant::now();
    for burst in 1..=n / BURST {
        for _ in 0..BURST {
            addr.do_send(Inc);
        }
        assert_eq!(addr.send(Get).await.unwrap(), burst * BURST);
    }
    t0.elapsed()
}

async fn ours_do_send(n: u64) -> Duration {
    let r: ActorRef<Counter> = ChildSpec::of(Counter::default).start_unsupervised();
    let t0 = Instant::now();
    for burst in 1..=n / BURST {
        for _ in 0..BURST {
            r.do_send(Inc);
        }
        assert_eq!(r.send(Get).await.unwrap(), burst * BURST);
    }
    assert_eq!(r.mailbox_snapshot().rejected, 0);
    t0.elapsed()
}

async fn bare_send(n: u64) -> Duration {
    let addr = Counter::default().start();
    let t0 = Instant::now();
    for _ in 0..n {
        addr.send(Inc).await.unwrap();
    }
    t0.elapsed()
}

async fn ours_send(n: u64) -> Duration {
    let r: ActorRef<Counter> = ChildSpec::of(Counter::default).start_unsupervised();
    let t0 = Instant::now();
    for _ in 0..n {
        r.send(Inc).await.unwrap();
    }
    t0.elapsed()
}

/// Heap bytes per idle actor: `start` makes one and returns a handle that is kept alive.
async fn per_actor<H>(
    count: usize,
    start: impl AsyncFn(usize) -> H,
    ping: impl AsyncFn(&H),
) -> f64 {
    let before = live_bytes();
    let mut handles = Vec::with_capacity(count);
    for i in 0..count {
        handles.push(start(i).await);
    }
    for h in &handles {
        ping(h).await; // every actor has started and handled one message
    }
    let after = live_bytes();
    drop(handles);
    (after - before) as f64 / count as f64
}

fn main() {
    let args = Args::parse();
    System::new().block_on(async move {
        let (mut bd, mut od, mut bs, mut os) = (vec![], vec![], vec![], vec![]);
        for _ in 0..args.rounds {
            bd.push(rate(args.messages, bare_do_send(args.messages).await));
            od.push(rate(args.messages, ours_do_send(args.messages).await));
            bs.push(rate(args.requests, bare_send(args.requests).await));
            os.push(rate(args.requests, ours_send(args.requests).await));
        }
        let (bd, od, bs, os) = (median(bd), median(od), median(bs), median(os));
        println!("# mailbox-bench ({} rounds, medians)\n", args.rounds);
        println!("| path | bare actix Addr msg/s | podvisor ActorRef msg/s | podvisor throughput vs bare |");
        println!("|---|---:|---:|---:|");
        println!(
            "| do_send ({} messages in bursts of {BURST}) | {:.0} | {:.0} | {:+.1} % |",
            args.messages,
            bd,
            od,
            (od / bd - 1.0) * 100.0
        );
        println!(
            "| send().await ({} sequential requests) | {:.0} | {:.0} | {:+.1} % |",
            args.requests,
            bs,
            os,
            (os / bs - 1.0) * 100.0
        );

        let n = args.idle;
        let bare = per_actor(
            n,
            async |_| Counter::default().start(),
            async |a: &Addr<Counter>| {
                a.send(Get).await.unwrap();
            },
        )
        .await;
        let unsupervised = per_actor(
            n,
            async |_| ChildSpec::of(Counter::default).start_unsupervised(),
            async |r: &ActorRef<Counter>| {
                r.send(Get).await.unwrap();
            },
        )
        .await;
        // Supervised: the child spec, the supervisor's slot and the registry entry too.
        let registry = Registry::new();
        let sup = podvisor_actors::start_root(
            "bench",
            SupervisorConfig::default(),
            registry.clone(),
            vec![],
            |_| {},
        );
        let supervised = per_actor(
            n,
            async |i| {
                let (r, spec) = ChildSpec::of(Counter::default).key(i.to_string()).build();
                sup.send(podvisor_actors::StartChild(spec)).await.unwrap();
                r
            },
            async |r: &ActorRef<Counter>| {
                r.send(Get).await.unwrap();
            },
        )
        .await;
        println!("\n| idle actor ({n} started) | heap bytes per actor | extra vs bare actix |");
        println!("|---|---:|---:|");
        println!("| bare actix `Addr` | {bare:.0} | - |");
        println!(
            "| podvisor, unsupervised | {unsupervised:.0} | {:+.0} |",
            unsupervised - bare
        );
        println!(
            "| podvisor, supervised + registered | {supervised:.0} | {:+.0} |",
            supervised - bare
        );
    });
}
