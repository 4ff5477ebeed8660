use super::*;

fn termination(cause: Cause, grace: i64) -> Termination {
    Termination {
        cause,
        since: Instant::now(),
        grace: GracePeriod::from_seconds(grace),
    }
}

#[test]
fn syncing_moves_only_to_terminating() {
    let mut l = Lifecycle::Syncing;
    assert_eq!(l.work_kind(), Some(WorkKind::Sync));
    assert!(!l.termination_requested());
    let refused = l.stopped().unwrap_err();
    assert_eq!(
        refused.to_string(),
        "a pod that is syncing cannot become terminated"
    );
    assert!(l.finish().is_err());
    assert!(l.shrink_grace(GracePeriod::MIN).is_err());
    assert_eq!(l, Lifecycle::Syncing, "a refused move changes nothing");
    l.terminate(termination(Cause::Deleted, 30)).unwrap();
    assert_eq!(l.work_kind(), Some(WorkKind::Terminating));
    assert!(l.termination_requested() && !l.is_terminated());
}

#[test]
fn terminating_never_goes_back_and_its_grace_only_shrinks() {
    let mut l = Lifecycle::Syncing;
    l.terminate(termination(Cause::Killed, 30)).unwrap();
    assert!(
        l.terminate(termination(Cause::Evicted, 5)).is_err(),
        "a second start is refused"
    );
    assert_eq!(l.termination().unwrap().cause, Cause::Killed);
    assert_eq!(l.shrink_grace(GracePeriod::from_seconds(60)), Ok(false));
    assert_eq!(l.grace(), Some(GracePeriod::from_seconds(30)));
    assert_eq!(l.shrink_grace(GracePeriod::from_seconds(10)), Ok(true));
    assert_eq!(l.grace(), Some(GracePeriod::from_seconds(10)));
    assert_eq!(l.shrink_grace(GracePeriod::from_seconds(10)), Ok(false));
}

#[test]
fn terminated_and_finished_are_one_way() {
    let mut l = Lifecycle::Syncing;
    l.terminate(termination(Cause::Completed, 30)).unwrap();
    l.stopped().unwrap();
    assert_eq!(l.work_kind(), Some(WorkKind::Terminated));
    assert!(l.is_terminated() && !l.is_finished());
    assert!(l.stopped().is_err());
    assert!(l.terminate(termination(Cause::Deleted, 1)).is_err());
    assert!(l.shrink_grace(GracePeriod::MIN).is_err());
    assert_eq!(l.grace(), None, "no grace period once stopped");
    l.finish().unwrap();
    assert!(l.is_finished() && l.work_kind().is_none());
    assert_eq!(l.termination().unwrap().cause, Cause::Completed);
    let (mut a, mut b, mut c) = (l, l, l);
    for refused in [
        a.finish(),
        b.stopped(),
        c.terminate(termination(Cause::Killed, 1)),
    ] {
        assert_eq!(refused.unwrap_err().from, "finished");
    }
}

#[test]
fn a_pod_with_nothing_to_clean_up_finishes_from_terminating() {
    let mut l = Lifecycle::Syncing;
    l.terminate(termination(Cause::Orphaned, 30)).unwrap();
    l.finish().unwrap();
    assert!(l.is_finished() && l.is_terminated());
}
