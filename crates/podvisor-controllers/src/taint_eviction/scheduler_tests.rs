//! The scheduler on paused tokio time: deadlines from `timeAdded`, moved by toleration and
//! taint changes, cancelled, recomputed after a restart, capped for huge values; and a
//! randomized run checked against an independent oracle: every eviction exactly when the
//! rules say, none missed, none twice.

use std::collections::{HashMap, HashSet};
use std::future::poll_fn;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint, Toleration};
use podvisor_core::{ObjectKey, PodUid};
use tokio::time::Instant;

use super::*;
use crate::clock::WallClock;

const BASE: u64 = 1_700_000_000_000;

fn paused<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(f)
}

fn taint(key: &str, added_ms: u64) -> Taint {
    Taint {
        key: key.into(),
        effect: "NoExecute".into(),
        value: None,
        time_added: podvisor_core::time::from_nanos(i64::try_from(added_ms).unwrap() * 1_000_000),
    }
}

fn node(taints: Vec<Taint>) -> Node {
    Node {
        spec: Some(NodeSpec {
            taints: Some(taints),
            ..NodeSpec::default()
        }),
        ..Node::default()
    }
}

fn tol(key: &str, seconds: Option<i64>) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        toleration_seconds: seconds,
        ..Toleration::default()
    }
}

fn key(n: usize) -> ObjectKey {
    ObjectKey::pod("default", &format!("p{n}"))
}

fn view(n: usize, tolerations: Vec<Toleration>) -> PodView {
    PodView {
        uid: PodUid::from(format!("uid-{n}").as_str()),
        tolerations,
        mirror: false,
        deleting: false,
    }
}

/// The next timer that fires before `until`, with what the scheduler makes of it.
async fn next(s: &mut Scheduler, until: Instant) -> Option<(ObjectKey, Option<Due>)> {
    let fired = tokio::time::timeout_at(until, poll_fn(|cx| s.queue().poll_due(cx))).await;
    let (key, _) = fired.ok()?;
    let due = s.fired(key.clone());
    Some((key, due))
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn a_toleration_of_thirty_seconds_evicts_at_thirty() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![tol("k", Some(30))]));
        s.set_pod(key(2), view(2, vec![tol("k", None)]));
        let (k, due) = next(&mut s, t0 + secs(3600)).await.unwrap();
        assert_eq!(t0.elapsed(), secs(30));
        assert_eq!(k, key(1));
        assert!(matches!(due, Some(Due::Evict { .. })));
        assert!(
            next(&mut s, t0 + secs(3600)).await.is_none(),
            "forever stays"
        );
    });
}

#[test]
fn removing_the_taint_cancels_and_a_changed_toleration_moves_the_deadline() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![tol("k", Some(30))]));
        s.set_pod(key(2), view(2, vec![tol("k", Some(30))]));
        assert!(next(&mut s, t0 + secs(5)).await.is_none());
        // At 5 s pod 2's toleration becomes 10 s: due at 10 s from the taint's time.
        assert!(!s.set_pod(key(2), view(2, vec![tol("k", Some(10))])));
        let (k, _) = next(&mut s, t0 + secs(60)).await.unwrap();
        assert_eq!((k, t0.elapsed()), (key(2), secs(10)));
        s.set_pod(
            key(2),
            PodView {
                deleting: true,
                ..view(2, vec![])
            },
        );
        // At 15 s the taint goes: pod 1's countdown is cancelled.
        tokio::time::sleep_until(t0 + secs(15)).await;
        let cancelled = s.set_node(Some(&node(vec![])));
        assert_eq!(cancelled, vec![key(1)]);
        assert!(
            next(&mut s, t0 + secs(40)).await.is_none(),
            "30 s passed: nothing"
        );
        s.remove_pod(&key(1));
        // A short toleration raised at once: the deadline moves later.
        s.set_node(Some(&node(vec![taint("k", BASE + 40_000)])));
        s.set_pod(key(3), view(3, vec![tol("k", Some(1))]));
        s.set_pod(key(3), view(3, vec![tol("k", Some(100))]));
        let (k, _) = next(&mut s, t0 + secs(3600)).await.unwrap();
        assert_eq!((k, t0.elapsed()), (key(3), secs(140)));
    });
}

#[test]
fn another_taint_only_shortens_and_its_removal_restores() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        let tolerations = vec![tol("a", Some(60)), tol("b", Some(10))];
        s.set_node(Some(&node(vec![taint("a", BASE)])));
        s.set_pod(key(1), view(1, tolerations));
        tokio::time::sleep(secs(20)).await;
        s.set_node(Some(&node(vec![
            taint("a", BASE),
            taint("b", BASE + 20_000),
        ])));
        tokio::time::sleep(secs(5)).await;
        // b goes before its 10 s: a's countdown stands (kubernetes#90794 the other way).
        s.set_node(Some(&node(vec![taint("a", BASE)])));
        let (k, _) = next(&mut s, t0 + secs(3600)).await.unwrap();
        assert_eq!((k, t0.elapsed()), (key(1), secs(60)));
    });
}

#[test]
fn a_restarted_scheduler_keeps_the_countdown() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![tol("k", Some(30))]));
        tokio::time::sleep(secs(15)).await;
        drop(s);
        // A new instance 15 s later, rebuilt from the store: the same deadline.
        let mut s = Scheduler::new(WallClock::anchored(BASE + 15_000));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.reset_pods(vec![(key(1), view(1, vec![tol("k", Some(30))]))]);
        let (k, _) = next(&mut s, t0 + secs(3600)).await.unwrap();
        assert_eq!((k, t0.elapsed()), (key(1), secs(30)), "30 s, not 45");
    });
}

#[test]
fn untolerated_and_non_positive_seconds_mean_now_and_static_pods_are_reported_once() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![]));
        s.set_pod(key(2), view(2, vec![tol("k", Some(0))]));
        s.set_pod(
            key(3),
            PodView {
                mirror: true,
                ..view(3, vec![])
            },
        );
        let mut seen = Vec::new();
        while let Some((k, due)) = next(&mut s, t0 + secs(1)).await {
            seen.push((k, due));
        }
        assert_eq!(t0.elapsed(), secs(1));
        let evicted: Vec<&ObjectKey> = seen
            .iter()
            .filter(|(_, d)| matches!(d, Some(Due::Evict { .. })))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(evicted.len(), 2);
        let statics = seen
            .iter()
            .filter(|(_, d)| matches!(d, Some(Due::WouldEvictStatic { .. })))
            .count();
        assert_eq!(statics, 1);
        // A node change re-arms the static pod's timer, but it is reported only once.
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        while let Some((_, due)) = next(&mut s, t0 + secs(2)).await {
            assert!(!matches!(due, Some(Due::WouldEvictStatic { .. })));
        }
    });
}

#[test]
fn a_toleration_of_centuries_sets_a_timer_it_can_hold() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![tol("k", Some(i64::MAX))]));
        s.set_pod(key(2), view(2, vec![tol("k", Some(3_000_000_000))]));
        // Each re-arms at the longest timer and never fires.
        let fired = next(&mut s, t0 + crate::clock::MAX_TIMER * 2 + secs(1)).await;
        assert!(fired.is_none() || fired.as_ref().is_some_and(|(_, d)| d.is_none()));
        assert_eq!(s.pending(), 2);
    });
}

#[test]
fn a_clock_anchored_again_moves_the_timers_by_the_wall_time() {
    paused(async {
        let t0 = Instant::now();
        let mut s = Scheduler::new(WallClock::anchored(BASE));
        s.set_node(Some(&node(vec![taint("k", BASE)])));
        s.set_pod(key(1), view(1, vec![tol("k", Some(60))]));
        tokio::time::sleep(secs(10)).await;
        // The machine was suspended for 20 s: the wall clock reads 20 s more than tokio's.
        s.reanchor(WallClock::anchored(BASE + 30_000));
        let (k, _) = next(&mut s, t0 + secs(3600)).await.unwrap();
        assert_eq!(
            (k, t0.elapsed()),
            (key(1), secs(40)),
            "due 60 s after the taint, by the wall"
        );
    });
}

/// What the rules say, written out again, simply: the soonest of each taint's start plus
/// the seconds of the first toleration naming its key; now if none does or seconds ≤ 0.
fn oracle(taints: &[(String, u64)], tolerations: &[(String, Option<i64>)]) -> Option<u64> {
    let mut best: Option<u64> = None;
    for (k, added) in taints {
        let at = match tolerations.iter().find(|(tk, _)| tk == k) {
            None => Some(0),
            Some((_, None)) => None,
            Some((_, Some(s))) if *s <= 0 => Some(0),
            Some((_, Some(s))) => Some(added + (*s as u64) * 1000),
        };
        if let Some(at) = at {
            best = Some(best.map_or(at, |b| b.min(at)));
        }
    }
    best
}

/// A small deterministic generator (xorshift), so a failure can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn randomized_evictions_happen_exactly_when_the_rules_say_and_never_twice() {
    for seed in [1u64, 7, 42, 1234, 99991] {
        paused(randomized(seed));
    }
}

async fn randomized(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let clock = WallClock::anchored(BASE);
    let mut s = Scheduler::new(clock);
    let keys = ["a", "b", "c"];
    let mut taints: Vec<(String, u64)> = Vec::new();
    let mut pods: HashMap<usize, Vec<(String, Option<i64>)>> = HashMap::new();
    let mut evicted: HashSet<usize> = HashSet::new();
    let random_tolerations = |rng: &mut Rng| -> Vec<(String, Option<i64>)> {
        let mut out = Vec::new();
        for k in keys {
            if rng.below(4) == 0 {
                continue;
            }
            let secs = match rng.below(5) {
                0 => None,
                1 => Some(0),
                _ => Some(rng.below(120) as i64 + 1),
            };
            out.push((k.to_string(), secs));
        }
        out
    };
    let to_view = |n: usize, t: &[(String, Option<i64>)]| {
        view(n, t.iter().map(|(k, s)| tol(k, *s)).collect())
    };
    for n in 0..300 {
        let t = random_tolerations(&mut rng);
        s.set_pod(key(n), to_view(n, &t));
        pods.insert(n, t);
    }
    for _step in 0..200 {
        // Run until the next change, checking every eviction against the oracle: at its
        // deadline, or at once if the last change made it due already.
        let since = clock.now_ms();
        let until = Instant::now() + Duration::from_millis(rng.below(5_000) + 1);
        while let Some((k, due)) = next(&mut s, until).await {
            let Some(Due::Evict { .. }) = due else {
                continue;
            };
            let n: usize = k.name[1..].parse().unwrap();
            let now = clock.now_ms();
            let want = oracle(&taints, &pods[&n]).expect("evicted a pod the rules keep");
            assert!(
                want <= now,
                "seed {seed}: p{n} evicted at {now}, due at {want}"
            );
            assert!(
                now <= want.max(since) + 1,
                "seed {seed}: p{n} late: due {want}, evicted {now}"
            );
            assert!(evicted.insert(n), "seed {seed}: p{n} evicted twice");
            s.set_pod(
                k,
                PodView {
                    deleting: true,
                    ..to_view(n, &pods[&n])
                },
            );
        }
        let now = clock.now_ms();
        for (n, t) in &pods {
            if !evicted.contains(n)
                && let Some(at) = oracle(&taints, t)
            {
                assert!(
                    at > now.saturating_sub(1),
                    "seed {seed}: p{n} missed: due {at}, now {now}"
                );
            }
        }
        // One random change: a taint added or removed, or a pod's tolerations changed.
        match rng.below(3) {
            0 => {
                let k = keys[rng.below(3) as usize].to_string();
                if let Some(i) = taints.iter().position(|(t, _)| *t == k) {
                    taints.remove(i);
                } else {
                    taints.push((k, now));
                }
                let node_taints = taints.iter().map(|(k, at)| taint(k, *at)).collect();
                s.set_node(Some(&node(node_taints)));
            }
            _ => {
                let n = rng.below(300) as usize;
                if !evicted.contains(&n) {
                    let t = random_tolerations(&mut rng);
                    s.set_pod(key(n), to_view(n, &t));
                    pods.insert(n, t);
                }
            }
        }
    }
    assert!(
        evicted.len() > 20,
        "seed {seed}: the run evicted {} pods",
        evicted.len()
    );
}
