//! Mailbox counts: exact under concurrent senders, honest about a slow actor, and intact
//! across restarts.

mod support;

use std::time::Duration;

use podvisor_actors::{ChildSpec, Registry, SendError, SupervisorConfig, start_root};
use support::*;

/// Sends `Tick` until accepted, counting refusals.
fn send_until_accepted(w: &podvisor_actors::ActorRef<Worker>) -> u64 {
    let mut refused = 0;
    let mut msg = Tick;
    loop {
        match w.try_send(msg) {
            Ok(()) => return refused,
            Err(SendError::Full(m)) => {
                refused += 1;
                msg = m;
                std::thread::yield_now();
            }
            Err(SendError::Closed(_)) => panic!("actor stopped"),
        }
    }
}

#[test]
fn eight_senders_times_100k_messages_are_counted_exactly() {
    const SENDERS: u64 = 8;
    const EACH: u64 = 100_000;
    actix::System::new().block_on(async {
        let journal = Journal::default();
        let w = ChildSpec::of(move || Worker::new("counted", &journal))
            .capacity(1024)
            .start_unsupervised();
        let threads: Vec<_> = (0..SENDERS)
            .map(|_| {
                let w = w.clone();
                std::thread::spawn(move || (0..EACH).map(|_| send_until_accepted(&w)).sum::<u64>())
            })
            .collect();
        // Let the actor drain while the senders run on their own threads.
        let mut refused = 0;
        for t in threads {
            while !t.is_finished() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            refused += t.join().unwrap();
        }
        // The actor's own count (one more for this Ping) must equal the mailbox's.
        let actor_count = w.send(Ping).await.unwrap();
        assert_eq!(actor_count, SENDERS * EACH + 1);
        let snap = w.mailbox_snapshot();
        assert_eq!(snap.sent, SENDERS * EACH + 1);
        assert_eq!(snap.handled, SENDERS * EACH + 1);
        assert_eq!(snap.queued, 0);
        assert_eq!(snap.rejected, refused, "every refusal counted, no more");
        assert_eq!(snap.capacity, 1024);
        assert_eq!(snap.last_message, Some("support::Ping"));
    });
}

#[test]
fn a_slow_handler_shows_queued_messages_and_their_age() {
    let system = actix::System::new();
    system.block_on(async {
        let journal = Journal::default();
        let w = ChildSpec::of(move || Worker::new("slow", &journal))
            .capacity(4)
            .start_unsupervised();
        w.send(Ping).await.unwrap();
        // The actor shares this thread, so a watcher thread observes it while it blocks.
        let watcher = {
            let w = w.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                for _ in 0..4 {
                    w.try_send(Tick).unwrap();
                }
                // The mailbox is bounded: the fifth is refused while the actor is stuck.
                assert!(matches!(w.try_send(Tick), Err(SendError::Full(Tick))));
                std::thread::sleep(Duration::from_millis(150));
                w.mailbox_snapshot()
            })
        };
        w.do_send(Block(Duration::from_millis(400)));
        while !watcher.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let during = watcher.join().unwrap();
        assert_eq!(during.queued, 4);
        assert!(
            during.oldest_queued_ms >= 140.0 && during.oldest_queued_ms < 400.0,
            "oldest {} ms",
            during.oldest_queued_ms
        );
        assert_eq!(during.rejected, 1);
        assert_eq!(during.last_message, Some("support::Block"));

        // Once the handler returns, the queue drains and the slow call shows in the
        // handling-time summary.
        assert_eq!(w.send(Ping).await.unwrap(), 7);
        let after = w.mailbox_snapshot();
        assert_eq!((after.queued, after.oldest_queued_ms), (0, 0.0));
        assert!(
            after.handle_time.p99_us >= 200_000.0,
            "{:?}",
            after.handle_time
        );
        // The ticks queued behind the block ran as a burst, where timing is sampled.
        assert!(
            (2..=7).contains(&after.handle_time.count),
            "{:?}",
            after.handle_time
        );
    });
}

#[test]
fn counts_stay_consistent_across_restarts() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let j = journal.clone();
        let (w, spec) = ChildSpec::of(move || Worker::new("w", &j)).key("w").build();
        start_root(
            "root",
            SupervisorConfig::default(),
            registry.clone(),
            vec![spec],
            |_| {},
        );
        for _ in 0..10 {
            w.do_send(Tick);
        }
        w.do_send(Crash::InHandler);
        for _ in 0..5 {
            w.do_send(Tick);
        }
        // Five ticks queued behind the crash reach the new instance.
        until("restart", Duration::from_secs(5), || {
            journal.starts("w") == 2
        })
        .await;
        assert_eq!(w.send(Ping).await, Ok(6));
        let s = registry.get("worker/w").unwrap().mailbox;
        assert_eq!(s.sent, 17);
        assert_eq!(s.failed, 1, "the crash");
        assert_eq!(s.handled, 16);
        assert_eq!(s.sent, s.handled + s.failed + s.dropped + s.queued as u64);
        assert_eq!(s.restarts, 1);
        let state = registry.get("worker/w").unwrap().state;
        assert_eq!(
            state,
            Some(serde_json::json!(6)),
            "the actor's published summary"
        );
    });
}
