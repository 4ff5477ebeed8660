//! When a pod must leave a node with NoExecute taints, as plain functions. The rules are
//! Kubernetes' (`getMinTolerationTime` over the tolerations the pod uses), with each
//! taint's own countdown starting at its `timeAdded`:
//!
//! - a NoExecute taint the pod does not tolerate: now;
//! - a taint tolerated by a toleration with `tolerationSeconds` ≤ 0: now;
//! - a taint tolerated without `tolerationSeconds`: never, for that taint;
//! - otherwise that taint's `timeAdded` + the seconds; the pod goes at the earliest.
//!
//! Computed afresh from the current taints and tolerations at every change, so a deadline
//! follows both (kubernetes#108982, #102993), and a taint removed takes its countdown with
//! it even when other tolerated taints remain (kubernetes#90794).

use k8s_openapi::api::core::v1::{Taint, Toleration};
use podvisor_core::taints::{self, NO_EXECUTE};

/// A NoExecute taint with the wall time (ms since the epoch) its countdown starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedTaint {
    pub taint: Taint,
    pub added_ms: u64,
}

/// When a pod must go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deadline {
    Never,
    /// At this wall time (ms); one in the past means now. `cause` is the taint that sets it.
    At {
        ms: u64,
        cause: String,
    },
}

impl Deadline {
    pub fn ms(&self) -> Option<u64> {
        match self {
            Deadline::Never => None,
            Deadline::At { ms, .. } => Some(*ms),
        }
    }
}

/// A taint's time from its `timeAdded`, when it has one.
pub fn time_added_ms(t: &Taint) -> Option<u64> {
    let at = t.time_added.as_ref()?;
    u64::try_from(at.0.as_millisecond()).ok()
}

/// The node's NoExecute taints, each with its start (`timeAdded`, or `fallback` for one
/// without, which the store never writes but a client could).
pub fn no_execute(taints: &[Taint], mut fallback: impl FnMut(&Taint) -> u64) -> Vec<TimedTaint> {
    taints
        .iter()
        .filter(|t| t.effect == NO_EXECUTE)
        .map(|t| TimedTaint {
            added_ms: time_added_ms(t).unwrap_or_else(|| fallback(t)),
            taint: t.clone(),
        })
        .collect()
}

/// The deadline of a pod with `tolerations` on a node with `taints` (NoExecute only).
pub fn deadline(taints: &[TimedTaint], tolerations: &[Toleration]) -> Deadline {
    let mut soonest = Deadline::Never;
    for t in taints {
        let ms = match taints::used_toleration(tolerations, &t.taint) {
            None => 0,
            Some(tol) => match tol.toleration_seconds {
                None => continue,
                Some(s) if s <= 0 => 0,
                Some(s) => {
                    let s = u64::try_from(s).unwrap_or(u64::MAX);
                    t.added_ms.saturating_add(s.saturating_mul(1000))
                }
            },
        };
        if soonest.ms().is_none_or(|current| ms < current) {
            soonest = Deadline::At {
                ms,
                cause: taints::describe(&t.taint),
            };
        }
    }
    soonest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, added_ms: u64) -> TimedTaint {
        TimedTaint {
            taint: Taint {
                key: key.into(),
                effect: NO_EXECUTE.into(),
                ..Taint::default()
            },
            added_ms,
        }
    }

    fn tol(key: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(NO_EXECUTE.into()),
            toleration_seconds: seconds,
            ..Toleration::default()
        }
    }

    #[test]
    fn the_rules_for_the_minimum_toleration() {
        let node = [taint("a", 1_000), taint("b", 5_000)];
        assert_eq!(deadline(&[], &[]), Deadline::Never, "no taints");
        let untolerated = deadline(&node, &[tol("a", None)]);
        assert_eq!(
            untolerated,
            Deadline::At {
                ms: 0,
                cause: "b:NoExecute".into()
            }
        );
        assert_eq!(
            deadline(&node, &[tol("a", None), tol("b", None)]),
            Deadline::Never
        );
        assert_eq!(
            deadline(&node, &[tol("a", Some(0)), tol("b", None)]).ms(),
            Some(0)
        );
        assert_eq!(
            deadline(&node, &[tol("a", Some(-5)), tol("b", None)]).ms(),
            Some(0)
        );
        // Each countdown from its own taint's time; the earliest wins.
        let both = [tol("a", Some(30)), tol("b", Some(10))];
        assert_eq!(
            deadline(&node, &both),
            Deadline::At {
                ms: 15_000,
                cause: "b:NoExecute".into()
            }
        );
        let a_first = [tol("a", Some(3)), tol("b", Some(10))];
        assert_eq!(deadline(&node, &a_first).ms(), Some(4_000));
        // A finite and a forever toleration: the finite one counts.
        assert_eq!(
            deadline(&node, &[tol("a", Some(30)), tol("b", None)]).ms(),
            Some(31_000)
        );
    }

    #[test]
    fn removing_the_taint_that_set_the_deadline_moves_it() {
        let both = [tol("a", Some(60)), tol("b", Some(10))];
        let node = [taint("a", 0), taint("b", 0)];
        assert_eq!(deadline(&node, &both).ms(), Some(10_000));
        assert_eq!(
            deadline(&node[..1], &both).ms(),
            Some(60_000),
            "b gone: a's countdown"
        );
        let forever = [tol("a", None), tol("b", Some(10))];
        assert_eq!(
            deadline(&node[..1], &forever),
            Deadline::Never,
            "kubernetes#90794"
        );
    }

    #[test]
    fn huge_seconds_saturate_instead_of_wrapping() {
        let d = deadline(&[taint("a", 5)], &[tol("a", Some(i64::MAX))]);
        assert_eq!(d.ms(), Some(u64::MAX));
    }

    #[test]
    fn the_first_matching_toleration_is_used_as_kubernetes_does() {
        let node = [taint("a", 0)];
        let tolerations = [tol("a", Some(60)), tol("", None)];
        assert_eq!(deadline(&node, &tolerations).ms(), Some(60_000));
    }

    #[test]
    fn only_no_execute_taints_count_and_a_missing_time_falls_back() {
        let taints = [
            Taint {
                key: "s".into(),
                effect: "NoSchedule".into(),
                ..Taint::default()
            },
            Taint {
                key: "x".into(),
                effect: NO_EXECUTE.into(),
                ..Taint::default()
            },
        ];
        let timed = no_execute(&taints, |_| 42);
        assert_eq!(timed.len(), 1);
        assert_eq!((timed[0].taint.key.as_str(), timed[0].added_ms), ("x", 42));
    }
}
