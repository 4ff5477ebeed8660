//! The supervisor against every way an actor can fail.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use podvisor_actors::supervisor::{Backoff, Intensity};
use podvisor_actors::{
    ActorRef, ChildSpec, ExitReason, Lifecycle, MailboxError, Registry, Restart, SendError,
    StartChild, StopChild, Strategy, Supervisor, SupervisorConfig, start_root,
};
use support::*;

fn config(strategy: Strategy, max_restarts: u32) -> SupervisorConfig {
    SupervisorConfig {
        strategy,
        backoff: Backoff::default(),
        intensity: Intensity {
            max_restarts,
            within: Duration::from_secs(60),
        },
        ..SupervisorConfig::default()
    }
}

fn worker(name: &str, journal: &Journal) -> (ActorRef<Worker>, ChildSpec) {
    let (n, j) = (name.to_string(), journal.clone());
    ChildSpec::of(move || Worker::new(&n, &j)).key(name).build()
}

type Escalations = Arc<Mutex<Vec<ExitReason>>>;

fn root(registry: &Arc<Registry>, cfg: SupervisorConfig, children: Vec<ChildSpec>) -> Escalations {
    let seen: Escalations = Default::default();
    let s = seen.clone();
    start_root("root", cfg, registry.clone(), children, move |e| {
        s.lock().unwrap().push(e.reason)
    });
    seen
}

/// Each way of crashing restarts the actor once, runs its rebuild again, and leaves its
/// sibling alone; messages queued behind the crash are delivered to the new instance.
#[test]
fn every_kind_of_crash_is_restarted_and_rebuilt() {
    for how in [
        Crash::InHandler,
        Crash::InAsyncHandler,
        Crash::InTimer,
        Crash::InSpawnedFuture,
        Crash::WithError,
    ] {
        paused_system().block_on(async move {
            let journal = Journal::default();
            let registry = Registry::new();
            let (a, a_spec) = worker("a", &journal);
            let (b, b_spec) = worker("b", &journal);
            let escalations = root(
                &registry,
                config(Strategy::OneForOne, 10),
                vec![a_spec, b_spec],
            );
            assert_eq!(a.send(Ping).await, Ok(1));
            assert_eq!(b.send(Ping).await, Ok(1));

            a.do_send(how);
            // Queued behind the crash: must reach the restarted instance.
            let after = a.send(Ping);
            until("restart", Duration::from_secs(5), || {
                journal.starts("a") == 2
            })
            .await;
            assert_eq!(
                after.await,
                Ok(1),
                "{how:?}: fresh instance answers queued request"
            );
            assert_eq!(
                journal
                    .entries()
                    .iter()
                    .filter(|e| *e == "start:a:1")
                    .count(),
                1
            );

            // The sibling kept its state: it was never restarted.
            assert_eq!(b.send(Ping).await, Ok(2), "{how:?}: sibling unaffected");
            assert_eq!(journal.starts("b"), 1);
            let snap = registry.get("worker/a").unwrap();
            assert_eq!(snap.mailbox.restarts, 1);
            assert_eq!(snap.mailbox.lifecycle, Lifecycle::Running);
            if matches!(how, Crash::WithError) {
                assert_eq!(snap.mailbox.last_panic, None);
            } else {
                let panic = snap.mailbox.last_panic.unwrap();
                assert!(panic.starts_with("crash in"), "{how:?}: {panic}");
            }
            assert!(escalations.lock().unwrap().is_empty());
        });
    }
}

#[test]
fn the_request_being_handled_at_the_crash_gets_an_error() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, spec) = worker("a", &journal);
        root(&registry, config(Strategy::OneForOne, 10), vec![spec]);
        assert_eq!(a.send(Crash::InHandler).await, Err(MailboxError::NoAnswer));
        let snap = registry.get("worker/a").unwrap().mailbox;
        assert_eq!(snap.failed, 1);
        assert_eq!(a.send(Ping).await, Ok(1));
    });
}

#[test]
fn restarts_back_off_exponentially() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, spec) = worker("a", &journal);
        root(&registry, config(Strategy::OneForOne, 100), vec![spec]);
        a.send(Ping).await.unwrap();
        let mut gaps = Vec::new();
        for n in 1..=4 {
            a.do_send(Crash::InHandler);
            let t0 = tokio::time::Instant::now();
            until("restart", Duration::from_secs(10), || {
                journal.starts("a") == n + 1
            })
            .await;
            gaps.push(t0.elapsed().as_millis() / 10 * 10);
        }
        // 10, 20, 40, 80 ms (give or take the 1 ms polling step, rounded down to 10 ms).
        assert_eq!(gaps, [10, 20, 40, 80]);
    });
}

#[test]
fn one_for_all_restarts_every_sibling() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, a_spec) = worker("a", &journal);
        let (b, b_spec) = worker("b", &journal);
        let (c, c_spec) = worker("c", &journal);
        root(
            &registry,
            config(Strategy::OneForAll, 10),
            vec![a_spec, b_spec, c_spec],
        );
        for w in [&a, &b, &c] {
            w.send(Ping).await.unwrap();
        }
        b.do_send(Crash::InHandler);
        until("all restarted", Duration::from_secs(5), || {
            ["a", "b", "c"].iter().all(|n| journal.starts(n) == 2)
        })
        .await;
        for w in [&a, &b, &c] {
            assert_eq!(w.send(Ping).await, Ok(1), "fresh state everywhere");
        }
    });
}

#[test]
fn rest_for_one_restarts_only_later_siblings() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, a_spec) = worker("a", &journal);
        let (b, b_spec) = worker("b", &journal);
        let (c, c_spec) = worker("c", &journal);
        root(
            &registry,
            config(Strategy::RestForOne, 10),
            vec![a_spec, b_spec, c_spec],
        );
        for w in [&a, &b, &c] {
            w.send(Ping).await.unwrap();
        }
        b.do_send(Crash::InHandler);
        until("b and c restarted", Duration::from_secs(5), || {
            journal.starts("b") == 2 && journal.starts("c") == 2
        })
        .await;
        assert_eq!(
            a.send(Ping).await,
            Ok(2),
            "an earlier sibling keeps running"
        );
        assert_eq!(b.send(Ping).await, Ok(1));
        assert_eq!(c.send(Ping).await, Ok(1));
        assert_eq!(journal.starts("a"), 1);
    });
}

/// A crash loop in a sub-supervisor: past its intensity it stops its other children and
/// escalates; its parent restarts it (and so its children) with fresh state.
#[test]
fn crash_loop_beyond_the_limit_stops_siblings_and_escalates() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, a_spec) = worker("a", &journal);
        let (b, b_spec) = worker("b", &journal);
        let (_sub, sub_spec) = Supervisor::spec(
            "sub",
            config(Strategy::OneForOne, 3),
            registry.clone(),
            vec![a_spec, b_spec],
        );
        let escalations = root(&registry, config(Strategy::OneForOne, 10), vec![sub_spec]);
        a.send(Ping).await.unwrap();
        b.send(Ping).await.unwrap();
        assert_eq!(b.send(Ping).await, Ok(2));

        // Three restarts are allowed; the fourth crash within the window escalates.
        for n in 1..=3 {
            a.do_send(Crash::InHandler);
            until("restart", Duration::from_secs(5), || {
                journal.starts("a") == n + 1
            })
            .await;
        }
        assert_eq!(journal.starts("b"), 1);
        a.do_send(Crash::InHandler);
        // Escalation: sub stops b and fails; root restarts sub, which starts a and b anew.
        until("sub restarted", Duration::from_secs(5), || {
            journal.starts("b") == 2
        })
        .await;
        assert_eq!(
            b.send(Ping).await,
            Ok(1),
            "the sibling was stopped and started fresh"
        );
        let sub = registry.get("supervisor/sub").unwrap();
        assert_eq!(sub.mailbox.restarts, 1);
        assert!(escalations.lock().unwrap().is_empty(), "root absorbed it");
        assert_eq!(
            registry.get("worker/a").unwrap().parent.unwrap().as_str(),
            "supervisor/sub"
        );
    });
}

#[test]
fn root_escalation_reaches_the_handler() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, a_spec) = worker("a", &journal);
        let (b, b_spec) = worker("b", &journal);
        let escalations = root(
            &registry,
            config(Strategy::OneForOne, 2),
            vec![a_spec, b_spec],
        );
        b.send(Ping).await.unwrap();
        for _ in 0..3 {
            a.do_send(Crash::InHandler);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        until("escalation", Duration::from_secs(5), || {
            !escalations.lock().unwrap().is_empty()
        })
        .await;
        let reason = escalations.lock().unwrap()[0].clone();
        assert!(
            matches!(&reason, ExitReason::Error(m) if m.contains("restart intensity exceeded")),
            "{reason:?}"
        );
        // The sibling was stopped for good.
        assert_eq!(b.send(Ping).await, Err(MailboxError::Closed));
        assert!(registry.is_empty(), "everything deregistered");
    });
}

#[test]
fn a_clean_stop_restarts_permanent_children_but_not_transient_ones() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (p, p_spec) = worker("permanent", &journal);
        let (tj, tn) = (journal.clone(), "transient".to_string());
        let (t, t_spec) = ChildSpec::of(move || Worker::new(&tn, &tj))
            .key("transient")
            .restart(Restart::Transient)
            .build();
        root(
            &registry,
            config(Strategy::OneForOne, 10),
            vec![p_spec, t_spec],
        );
        p.send(Finish).await.unwrap();
        t.send(Finish).await.unwrap();
        until("permanent restarted", Duration::from_secs(5), || {
            journal.starts("permanent") == 2
        })
        .await;
        until("transient gone", Duration::from_secs(5), || {
            !registry.contains("worker/transient")
        })
        .await;
        assert_eq!(p.send(Ping).await, Ok(1));
        assert_eq!(t.send(Ping).await, Err(MailboxError::Closed));
        assert_eq!(journal.starts("transient"), 1);
    });
}

#[test]
fn dynamic_children_start_stop_and_refuse_messages_once_gone() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (n, j) = ("w1".to_string(), journal.clone());
        let (w1, spec) = ChildSpec::of(move || Worker::new(&n, &j))
            .key("w1")
            .restart(Restart::Transient)
            .build();
        let sup = start_root(
            "pods",
            config(Strategy::OneForOne, 10),
            registry.clone(),
            vec![],
            |_| {},
        );
        sup.send(StartChild(spec)).await.unwrap();
        assert_eq!(w1.send(Ping).await, Ok(1));
        assert_eq!(
            registry.get("worker/w1").unwrap().parent.unwrap().as_str(),
            "supervisor/pods"
        );

        // A crash of a transient child is still restarted.
        w1.do_send(Crash::InHandler);
        until("restart", Duration::from_secs(5), || {
            journal.starts("w1") == 2
        })
        .await;

        let before = registry.totals_by_kind()["worker"].clone();
        assert_eq!((before.actors, before.restarts), (1, 1));
        assert!(before.handled >= 1);
        sup.send(StopChild(w1.id().clone())).await.unwrap();
        until("deregistered", Duration::from_secs(5), || {
            !registry.contains("worker/w1")
        })
        .await;
        // Counters of an actor gone for good stay in its kind's totals (Prometheus
        // counters never go down); only the live count drops.
        let after = registry.totals_by_kind()["worker"].clone();
        assert_eq!(after.actors, 0);
        assert_eq!(after.restarts, 1);
        assert!(after.handled >= before.handled, "{after:?}");
        assert_eq!(w1.send(Ping).await, Err(MailboxError::Closed));
        assert!(matches!(w1.try_send(Ping), Err(SendError::Closed(Ping))));
        assert_eq!(
            journal.starts("w1"),
            2,
            "not restarted after a requested stop"
        );
    });
}

fn transient_w1(journal: &Journal) -> (ActorRef<Worker>, ChildSpec) {
    let j = journal.clone();
    ChildSpec::of(move || Worker::new("w1", &j))
        .key("w1")
        .restart(Restart::Transient)
        .build()
}

/// A supervisor whose dynamic child `w1` is busy for 200 ms and has been asked to stop
/// for good: still there, stopping.
async fn stopping_namesake(
    journal: &Journal,
    registry: &Arc<Registry>,
) -> (ActorRef<Supervisor>, ActorRef<Worker>) {
    let sup = start_root(
        "pods",
        config(Strategy::OneForOne, 10),
        registry.clone(),
        vec![],
        |_| {},
    );
    let (old, spec) = transient_w1(journal);
    sup.send(StartChild(spec)).await.unwrap();
    assert_eq!(old.send(Ping).await, Ok(1));
    old.do_send(Linger(Duration::from_millis(200)));
    sup.send(StopChild(old.id().clone())).await.unwrap();
    (sup, old)
}

/// A pod UID reused at once: the new child with the old one's id starts as soon as the
/// old one is gone, instead of being ignored (its messages would wait forever).
#[test]
fn a_child_started_while_its_namesake_stops_starts_after_it() {
    paused_system().block_on(async {
        let (journal, registry) = (Journal::default(), Registry::new());
        let (sup, old) = stopping_namesake(&journal, &registry).await;
        let (new, spec) = transient_w1(&journal);
        sup.send(StartChild(spec)).await.unwrap();
        assert_eq!(journal.starts("w1"), 1, "not while the old one still runs");
        let answer = tokio::time::timeout(Duration::from_secs(5), new.send(Ping)).await;
        assert_eq!(answer, Ok(Ok(1)), "the successor runs");
        assert_eq!(journal.starts("w1"), 2);
        assert_eq!(old.send(Ping).await, Err(MailboxError::Closed));
        assert!(registry.contains("worker/w1"));
    });
}

/// The successor of a stopping child is stopped itself before it ran: it never starts.
#[test]
fn a_waiting_successor_that_is_stopped_never_starts() {
    paused_system().block_on(async {
        let (journal, registry) = (Journal::default(), Registry::new());
        let (sup, _) = stopping_namesake(&journal, &registry).await;
        let (new, spec) = transient_w1(&journal);
        sup.send(StartChild(spec)).await.unwrap();
        sup.send(StopChild(new.id().clone())).await.unwrap();
        until("the old one gone", Duration::from_secs(5), || {
            !registry.contains("worker/w1")
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(journal.starts("w1"), 1, "the successor never started");
        assert_eq!(new.send(Ping).await, Err(MailboxError::Closed));
    });
}

/// A crash in `rebuild` is a crash like any other: restarted with backoff, and a child
/// that cannot even start escalates once past the limit.
#[test]
fn a_crash_in_rebuild_is_restarted_then_escalates() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let j = journal.clone();
        let (_, spec) = ChildSpec::of(move || {
            let mut w = Worker::new("bad", &j);
            w.crash_in_rebuild = true;
            w
        })
        .key("bad")
        .build();
        let (good, good_spec) = worker("good", &journal);
        let seen = root(
            &registry,
            config(Strategy::OneForOne, 3),
            vec![good_spec, spec],
        );
        until("escalation", Duration::from_secs(30), || {
            !seen.lock().unwrap().is_empty()
        })
        .await;
        assert_eq!(journal.starts("bad"), 4, "the start and 3 restarts");
        assert!(
            good.send(Ping).await.is_err(),
            "siblings stopped on escalation"
        );
    });
}

#[cfg(feature = "fault-injection")]
#[test]
fn injected_panics_crash_the_named_actor() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let registry = Registry::new();
        let (a, spec) = worker("a", &journal);
        root(&registry, config(Strategy::OneForOne, 10), vec![spec]);
        a.send(Ping).await.unwrap();
        assert!(registry.inject_panic("worker/a", "chaos test"));
        assert!(!registry.inject_panic("worker/nope", "chaos test"));
        until("restart", Duration::from_secs(5), || {
            journal.starts("a") == 2
        })
        .await;
        let panic = registry
            .get("worker/a")
            .unwrap()
            .mailbox
            .last_panic
            .unwrap();
        assert!(panic.starts_with("injected fault: chaos test"), "{panic}");
    });
}

/// A reserved child has an address before it has a factory: what is sent to it then waits
/// in its mailbox, and the child bound later, under its key, handles it first once started.
#[test]
fn a_reserved_child_is_addressable_before_it_is_made() {
    paused_system().block_on(async {
        let journal = Journal::default();
        let (early, reserved) = ChildSpec::reserve::<Worker>().key("early").open();
        let queued = early.send(Ping);
        let j = journal.clone();
        let spec = reserved.with(move || Worker::new("early", &j));
        assert_eq!(spec.id().to_string(), "worker/early");
        let registry = Registry::new();
        let escalations = root(&registry, SupervisorConfig::default(), vec![spec]);
        assert_eq!(
            queued.await.unwrap(),
            1,
            "the message sent before it was made"
        );
        assert_eq!(early.send(Ping).await.unwrap(), 2);
        assert_eq!(journal.starts("early"), 1);
        assert!(escalations.lock().unwrap().is_empty());
    });
}
