use std::time::Duration;

use podvisor_cri::PodRef;

use super::*;

fn u(s: &str) -> PodUid {
    PodUid::from(s)
}

fn status(uid: &str, ip: &str) -> Arc<PodStatus> {
    Arc::new(PodStatus {
        pod: PodRef {
            uid: uid.into(),
            ..Default::default()
        },
        ips: vec![ip.into()],
        ..Default::default()
    })
}

fn ip(d: &CachedStatus) -> &str {
    d.status.ips.first().map(String::as_str).unwrap_or("")
}

#[test]
fn unknown_pods_read_as_empty() {
    let s = Store::default();
    let d = s.get(&u("u1"));
    assert_eq!(d.status.pod.uid, "u1");
    assert!(d.status.containers.is_empty() && d.error.is_none() && d.modified.is_none());
}

#[test]
fn set_keeps_only_newer_data() {
    let mut s = Store::default();
    let t0 = Instant::now();
    assert!(
        s.set(&u("u1"), Ok(status("u1", "a")), t0 + Duration::from_secs(2))
            .is_some()
    );
    assert!(
        s.set(
            &u("u1"),
            Ok(status("u1", "old")),
            t0 + Duration::from_secs(1)
        )
        .is_none()
    );
    assert_eq!(ip(&s.get(&u("u1"))), "a");
    let failed = Err(Arc::new(CriError::failed("test", "boom")));
    assert!(
        s.set(&u("u1"), failed, t0 + Duration::from_secs(2))
            .is_some()
    );
    assert!(s.get(&u("u1")).error.unwrap().to_string().contains("boom"));
    s.delete(&u("u1"));
    assert!(s.get(&u("u1")).modified.is_none());
}

#[test]
fn subscriber_is_answered_at_once_when_data_is_newer() {
    let mut s = Store::default();
    let t0 = Instant::now();
    s.set(&u("u1"), Ok(status("u1", "a")), t0 + Duration::from_secs(1));
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u1"), Some(t0), tx);
    assert_eq!(ip(&rx.try_recv().unwrap()), "a");
    // Not newer than itself: strictly after.
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u1"), Some(t0 + Duration::from_secs(1)), tx);
    assert!(rx.try_recv().is_err());
    assert_eq!(s.waiting()["u1"], 1);
}

#[test]
fn a_later_set_wakes_the_subscriber() {
    let mut s = Store::default();
    let t0 = Instant::now();
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u1"), Some(t0), tx);
    s.set(&u("u1"), Ok(status("u1", "stale")), t0); // not newer than t0
    assert!(rx.try_recv().is_err());
    s.set(
        &u("u1"),
        Ok(status("u1", "fresh")),
        t0 + Duration::from_millis(1),
    );
    assert_eq!(ip(&rx.try_recv().unwrap()), "fresh");
    assert!(s.waiting().is_empty(), "answered waiters are gone");
}

#[test]
fn the_global_timestamp_wakes_subscribers_of_every_pod() {
    let mut s = Store::default();
    let t0 = Instant::now();
    s.set(&u("u1"), Ok(status("u1", "a")), t0);
    let (tx1, mut rx1) = oneshot::channel();
    let (tx2, mut rx2) = oneshot::channel();
    s.subscribe(&u("u1"), Some(t0), tx1);
    s.subscribe(&u("never-seen"), Some(t0), tx2);
    s.update_time(t0); // not after t0
    assert!(rx1.try_recv().is_err() && rx2.try_recv().is_err());
    s.update_time(t0 + Duration::from_secs(1));
    // u1 answers with what it holds (the relist found nothing newer to store).
    assert_eq!(ip(&rx1.try_recv().unwrap()), "a");
    let empty = rx2.try_recv().unwrap();
    assert!(empty.status.containers.is_empty() && empty.modified.is_none());
}

#[test]
fn waiters_are_answered_in_timestamp_order_and_only_when_satisfied() {
    let mut s = Store::default();
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut rxs = Vec::new();
    // Arrival order differs from time order; two wait for the same time.
    for ms in [30, 20, 10, 20] {
        let (tx, rx) = oneshot::channel();
        s.subscribe(&u("u1"), Some(at(ms)), tx);
        rxs.push((ms, rx));
    }
    s.set(&u("u1"), Ok(status("u1", "x")), at(25));
    let answered: Vec<u64> = rxs
        .iter_mut()
        .filter_map(|(ms, rx)| rx.try_recv().ok().map(|_| *ms))
        .collect();
    assert_eq!(answered, [20, 10, 20], "only the satisfied ones");
    // Answered in time order, equal times in arrival order (arrival numbers 2, 4).
    assert_eq!(
        s.answered,
        [(Some(at(10)), 3), (Some(at(20)), 2), (Some(at(20)), 4)]
    );
    assert_eq!(s.waiting()["u1"], 1);
    s.update_time(at(31));
    assert!(rxs[0].1.try_recv().is_ok());
    assert_eq!(s.answered.last(), Some(&(Some(at(30)), 1)));
    assert!(s.waiting().is_empty());
}

#[test]
fn abandoned_waiters_do_not_leak() {
    let mut s = Store::default();
    let t0 = Instant::now();
    for _ in 0..100 {
        let (tx, rx) = oneshot::channel();
        s.subscribe(&u("u1"), Some(t0), tx);
        drop(rx);
    }
    assert_eq!(s.waiting()["u1"], 100);
    s.prune();
    assert!(s.waiting().is_empty());
    // A notify also drops them.
    let (tx, rx) = oneshot::channel();
    s.subscribe(&u("u2"), Some(t0), tx);
    drop(rx);
    s.set(&u("u2"), Ok(status("u2", "a")), t0);
    assert!(s.waiting().is_empty());
}

fn with_container(uid: &str, id: &str, state: podvisor_cri::ContainerState) -> Arc<PodStatus> {
    let mut s = Arc::unwrap_or_clone(status(uid, "a"));
    s.containers.push(podvisor_cri::ContainerStatus {
        id: id.into(),
        sandbox_id: "s".into(),
        name: "app".into(),
        attempt: 0,
        state,
        created_at: 1,
        started_at: 0,
        finished_at: 0,
        exit_code: 0,
        image: String::new(),
        image_ref: String::new(),
        reason: String::new(),
        message: String::new(),
        labels: Default::default(),
        annotations: Default::default(),
        log_path: String::new(),
        user: None,
        resources: None,
    });
    Arc::new(s)
}

#[test]
fn a_waiter_naming_the_container_its_sync_started_is_answered_by_data_showing_it_started() {
    use podvisor_cri::ContainerState::*;
    let mut s = Store::default();
    let t0 = Instant::now();
    let ended = t0 + Duration::from_millis(5);
    let need = |id: &str| Need {
        min: Some(ended),
        showing: Some(ContainerId(id.into())),
    };
    // The start's event was made before the sync ended: older than the sync's end, but
    // it shows what the sync did.
    s.set(&u("u1"), Ok(with_container("u1", "c1", Created)), t0);
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u1"), need("c1"), tx);
    assert!(rx.try_recv().is_err(), "created is not started");
    s.set(
        &u("u1"),
        Ok(with_container("u1", "c1", Running)),
        t0 + Duration::from_millis(1),
    );
    assert_eq!(rx.try_recv().unwrap().status.containers[0].state, Running);
    // Exited since: it started. Another container's start says nothing of c1.
    s.set(&u("u2"), Ok(with_container("u2", "c1", Exited)), t0);
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u2"), need("c1"), tx);
    assert!(rx.try_recv().is_ok());
    let (tx, mut rx) = oneshot::channel();
    s.subscribe(&u("u2"), need("c2"), tx);
    assert!(rx.try_recv().is_err());
    // Data newer than the sync still answers, whatever it shows.
    s.set(
        &u("u2"),
        Ok(with_container("u2", "c1", Exited)),
        ended + Duration::from_millis(1),
    );
    assert!(rx.try_recv().is_ok());
}
