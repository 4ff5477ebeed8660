//! The supervisor's decisions, as plain data: how long to wait before a restart, and when
//! a child crashes so often that the supervisor must give up and escalate. No actix, no
//! clock of its own: callers pass `now`, so tests drive it exactly.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use crate::id::ActorId;

/// Exponential backoff between restarts of one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    /// A child that ran this long since its last start is considered healthy again: its
    /// next crash restarts after `initial`.
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(10),
            max: Duration::from_secs(5),
            reset_after: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// Delay before the `n`-th consecutive restart (n ≥ 1): initial · 2^(n-1), capped.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// OTP's restart intensity: more than `max_restarts` restarts within `within`, counted
/// over all children, means restarting does not help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intensity {
    pub max_restarts: u32,
    pub within: Duration,
}

impl Default for Intensity {
    fn default() -> Self {
        Self {
            max_restarts: 10,
            within: Duration::from_secs(60),
        }
    }
}

/// Whose restarts the intensity counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// All children's together: over the intensity, the supervisor gives up and escalates
    /// (OTP's rule, for children that are parts of one whole).
    #[default]
    Group,
    /// Each child's alone, for children that are independent of each other (one per pod):
    /// a child that crashed more than `max_restarts` times in a row (without running for
    /// `reset_after` in between) is held, its backoff doubling on past the group's cap up
    /// to `max`, and the supervisor never escalates for it; the others go on. (Counted in
    /// a row, not within the window: a window empties during a long hold, which would let
    /// the child back to short delays.)
    EachChild { max: Duration },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Restart {
        after: Duration,
    },
    /// A child of an `EachChild` supervisor over the intensity: restarted after `after`.
    Hold {
        after: Duration,
        restarts: u32,
    },
    Escalate {
        restarts: u32,
        within: Duration,
    },
}

#[derive(Debug, Default)]
pub struct RestartTracker {
    backoff: Backoff,
    intensity: Intensity,
    scope: Scope,
    /// The group's recent restarts (`Scope::Group`).
    recent: VecDeque<Instant>,
    consecutive: HashMap<ActorId, u32>,
}

impl RestartTracker {
    pub fn new(backoff: Backoff, intensity: Intensity, scope: Scope) -> Self {
        Self {
            backoff,
            intensity,
            scope,
            ..Default::default()
        }
    }

    /// A child crashed at `now` after running since `started_at`.
    pub fn on_crash(&mut self, child: &ActorId, started_at: Instant, now: Instant) -> Decision {
        let n = self.consecutive.entry(child.clone()).or_insert(0);
        if now.saturating_duration_since(started_at) >= self.backoff.reset_after {
            *n = 0;
        }
        *n = n.saturating_add(1);
        let n = *n;
        if let Scope::EachChild { max } = self.scope {
            return if n > self.intensity.max_restarts {
                Decision::Hold {
                    after: Backoff {
                        max,
                        ..self.backoff
                    }
                    .delay(n),
                    restarts: n,
                }
            } else {
                Decision::Restart {
                    after: self.backoff.delay(n),
                }
            };
        }
        let within = self.intensity.within;
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > within)
        {
            self.recent.pop_front();
        }
        let restarts = u32::try_from(self.recent.len()).unwrap_or(u32::MAX);
        if restarts >= self.intensity.max_restarts {
            return Decision::Escalate { restarts, within };
        }
        self.recent.push_back(now);
        Decision::Restart {
            after: self.backoff.delay(n),
        }
    }

    /// Forgets a child that is gone for good.
    pub fn forget(&mut self, child: &ActorId) {
        self.consecutive.remove(child);
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(max_restarts: u32, within_s: u64) -> RestartTracker {
        scoped(max_restarts, within_s, Scope::Group)
    }

    fn scoped(max_restarts: u32, within_s: u64, scope: Scope) -> RestartTracker {
        RestartTracker::new(
            Backoff::default(),
            Intensity {
                max_restarts,
                within: Duration::from_secs(within_s),
            },
            scope,
        )
    }

    #[test]
    fn each_child_scope_holds_a_child_over_the_intensity_and_never_escalates() {
        let max = Duration::from_secs(300);
        let mut t = scoped(10, 60, Scope::EachChild { max });
        let (bad, good) = (ActorId::from("bad"), ActorId::from("good"));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut decisions = Vec::new();
        for i in 0..20 {
            decisions.push(t.on_crash(&bad, at(i * 100), at(i * 100 + 1)));
        }
        assert!(
            decisions[..10]
                .iter()
                .all(|d| matches!(d, Decision::Restart { .. }))
        );
        assert_eq!(
            decisions[10],
            Decision::Hold {
                after: Duration::from_millis(10_240),
                restarts: 11
            }
        );
        // Its backoff goes on doubling past the group's 5 s, up to `max`.
        assert_eq!(
            decisions[19],
            Decision::Hold {
                after: max,
                restarts: 20
            }
        );
        assert!(
            decisions
                .iter()
                .all(|d| !matches!(d, Decision::Escalate { .. }))
        );
        // Another child is counted alone: a plain restart at the initial delay.
        assert_eq!(
            t.on_crash(&good, at(0), at(2000)),
            Decision::Restart {
                after: Duration::from_millis(10)
            }
        );
        // Held however long ago its crashes began, until it runs for `reset_after`.
        assert!(matches!(
            t.on_crash(&bad, at(3_600_000), at(3_600_001)),
            Decision::Hold { restarts: 21, .. }
        ));
        assert_eq!(
            t.on_crash(&bad, at(3_600_000), at(3_660_000)),
            Decision::Restart {
                after: Duration::from_millis(10)
            }
        );
    }

    #[test]
    fn backoff_doubles_from_10ms_to_a_5s_cap() {
        let b = Backoff::default();
        let ms: Vec<u128> = (1..=12).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(
            ms,
            [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5000, 5000, 5000]
        );
        assert_eq!(b.delay(200), Duration::from_secs(5), "no overflow");
    }

    #[test]
    fn consecutive_crashes_back_off_and_a_long_run_resets() {
        let mut t = tracker(100, 3600);
        let id = ActorId::from("a");
        let t0 = Instant::now();
        let crash = |t: &mut RestartTracker, ran: u64, at: u64| {
            t.on_crash(
                &id,
                t0 + Duration::from_secs(at - ran),
                t0 + Duration::from_secs(at),
            )
        };
        assert_eq!(
            crash(&mut t, 1, 1),
            Decision::Restart {
                after: Duration::from_millis(10)
            }
        );
        assert_eq!(
            crash(&mut t, 1, 2),
            Decision::Restart {
                after: Duration::from_millis(20)
            }
        );
        assert_eq!(
            crash(&mut t, 1, 3),
            Decision::Restart {
                after: Duration::from_millis(40)
            }
        );
        // Ran for the reset period: back to the initial delay.
        assert_eq!(
            crash(&mut t, 60, 100),
            Decision::Restart {
                after: Duration::from_millis(10)
            }
        );
    }

    #[test]
    fn too_many_restarts_within_the_window_escalate() {
        let mut t = tracker(3, 10);
        let (a, b) = (ActorId::from("a"), ActorId::from("b"));
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(matches!(
            t.on_crash(&a, at(0), at(1)),
            Decision::Restart { .. }
        ));
        assert!(matches!(
            t.on_crash(&b, at(0), at(2)),
            Decision::Restart { .. }
        ));
        assert!(matches!(
            t.on_crash(&a, at(1), at(3)),
            Decision::Restart { .. }
        ));
        // A fourth restart within 10 s: intensity counts all children together.
        assert_eq!(
            t.on_crash(&b, at(2), at(4)),
            Decision::Escalate {
                restarts: 3,
                within: Duration::from_secs(10)
            }
        );
    }

    #[test]
    fn restarts_outside_the_window_do_not_count() {
        let mut t = tracker(2, 10);
        let a = ActorId::from("a");
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(matches!(
            t.on_crash(&a, at(0), at(0)),
            Decision::Restart { .. }
        ));
        assert!(matches!(
            t.on_crash(&a, at(0), at(5)),
            Decision::Restart { .. }
        ));
        // 11 s later the first has left the window.
        assert!(matches!(
            t.on_crash(&a, at(5), at(11)),
            Decision::Restart { .. }
        ));
        assert!(matches!(
            t.on_crash(&a, at(11), at(12)),
            Decision::Escalate { .. }
        ));
    }
}
