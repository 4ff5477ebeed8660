use super::*;

fn listed(id: &str, size: u64, pinned: bool) -> Listed {
    Listed {
        id: id.into(),
        size,
        pinned,
    }
}

#[test]
fn usage_above_the_high_threshold_frees_down_to_the_low_one() {
    let p = Policy::default();
    assert_eq!(p.to_free(1000, 200), None, "80% used");
    assert_eq!(p.to_free(1000, 150), Some(50), "85% used: down to 80%");
    assert_eq!(p.to_free(1000, 0), Some(200));
    assert!(
        Policy {
            high_percent: 50,
            low_percent: 60,
            ..p
        }
        .check()
        .is_err()
    );
    assert_eq!(
        Policy {
            high_percent: 100,
            ..p
        }
        .to_free(1000, 0),
        None,
        "100 turns it off"
    );
}

#[test]
fn least_recently_used_go_first_never_used_pinned_or_young_ones() {
    let t0 = Instant::now();
    let min_age = Duration::from_secs(120);
    let mut images = Images::default();
    let all = [
        listed("old", 10, false),
        listed("recent", 20, false),
        listed("pause", 1, true),
        listed("running", 40, false),
    ];
    let used = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
    images.detect(&all, &used(&["recent", "running"]), t0);
    images.detect(
        &all,
        &used(&["recent", "running"]),
        t0 + Duration::from_secs(100),
    );
    let at = t0 + Duration::from_secs(200);
    images.detect(&all, &used(&["running"]), at);
    let ids = |v: Vec<(String, u64)>| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    assert_eq!(
        ids(images.to_free(u64::MAX, &used(&["running"]), at, min_age)),
        ["old", "recent"]
    );
    assert_eq!(
        ids(images.to_free(5, &used(&["running"]), at, min_age)),
        ["old"]
    );
    assert!(
        images
            .to_free(u64::MAX, &used(&[]), t0 + Duration::from_secs(60), min_age)
            .is_empty(),
        "too young"
    );
    images.detect(&all[1..], &used(&[]), at);
    assert_eq!(images.len(), 3, "a removed image is forgotten");
    let p = Policy {
        max_age: Duration::from_secs(150),
        ..Policy::default()
    };
    assert_eq!(
        ids(images.too_old(&used(&["running"]), t0 + Duration::from_secs(251), &p)),
        ["recent"]
    );
}
