use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::threshold::Value;

fn obs(signal: Signal, available: i64) -> Observations {
    Observations::from([(
        signal,
        Observation {
            available,
            capacity: 1000,
        },
    )])
}

fn hard(signal: Signal, value: i64) -> Threshold {
    Threshold {
        signal,
        value: Value::Quantity(value),
        grace: Duration::ZERO,
        min_reclaim: None,
    }
}

#[test]
fn a_hard_threshold_acts_at_once_and_its_condition_outlasts_it_by_the_transition_period() {
    let t0 = Instant::now();
    let mut m = Manager::new(
        vec![hard(Signal::NodeFsAvailable, 100)],
        Duration::from_secs(30),
    );
    let p = m.pass(&obs(Signal::NodeFsAvailable, 99), t0);
    assert_eq!(p.act_on, [0]);
    assert_eq!(p.conditions, BTreeSet::from([Pressure::Disk]));
    let p = m.pass(
        &obs(Signal::NodeFsAvailable, 500),
        t0 + Duration::from_secs(10),
    );
    assert!(p.act_on.is_empty());
    assert_eq!(
        p.conditions,
        BTreeSet::from([Pressure::Disk]),
        "within 30 s"
    );
    let p = m.pass(
        &obs(Signal::NodeFsAvailable, 500),
        t0 + Duration::from_secs(31),
    );
    assert!(p.conditions.is_empty());
}

#[test]
fn a_soft_threshold_waits_out_its_grace_period_and_starts_over_when_it_clears() {
    let t0 = Instant::now();
    let mut soft = hard(Signal::MemoryAvailable, 100);
    soft.grace = Duration::from_secs(60);
    let mut m = Manager::new(vec![soft], Duration::ZERO);
    let low = obs(Signal::MemoryAvailable, 50);
    assert!(m.pass(&low, t0).act_on.is_empty());
    assert_eq!(
        m.conditions(),
        &BTreeSet::from([Pressure::Memory]),
        "reported at once"
    );
    assert!(m.pass(&low, t0 + Duration::from_secs(59)).act_on.is_empty());
    assert_eq!(m.pass(&low, t0 + Duration::from_secs(60)).act_on, [0]);
    m.pass(
        &obs(Signal::MemoryAvailable, 500),
        t0 + Duration::from_secs(61),
    );
    assert!(
        m.pass(&low, t0 + Duration::from_secs(62)).act_on.is_empty(),
        "counted again"
    );
}

#[test]
fn a_met_threshold_stays_met_until_its_minimum_is_reclaimed() {
    let t0 = Instant::now();
    let mut t = hard(Signal::NodeFsAvailable, 100);
    t.min_reclaim = Some(Value::Percentage(0.1));
    let mut m = Manager::new(vec![t], Duration::ZERO);
    assert_eq!(m.pass(&obs(Signal::NodeFsAvailable, 90), t0).act_on, [0]);
    let above = obs(Signal::NodeFsAvailable, 150);
    assert!(!m.relieved(&above), "150 < 100 + 10% of 1000");
    assert_eq!(m.pass(&above, t0).act_on, [0]);
    assert!(
        m.pass(&obs(Signal::NodeFsAvailable, 201), t0)
            .act_on
            .is_empty()
    );
}

#[test]
fn memory_is_reclaimed_first_and_unobserved_signals_meet_nothing() {
    let t0 = Instant::now();
    let mut m = Manager::new(
        vec![
            hard(Signal::PidAvailable, 10),
            hard(Signal::MemoryAvailable, 10),
            hard(Signal::ImageFsAvailable, 10),
        ],
        Duration::ZERO,
    );
    let mut o = obs(Signal::PidAvailable, 1);
    o.extend(obs(Signal::MemoryAvailable, 1));
    let p = m.pass(&o, t0);
    assert_eq!(p.act_on, [1, 0]);
    assert_eq!(
        p.conditions,
        BTreeSet::from([Pressure::Memory, Pressure::Pid])
    );
}
