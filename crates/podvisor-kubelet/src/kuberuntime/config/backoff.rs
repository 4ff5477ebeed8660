//! Crash-loop backoff, computed from the runtime's own records (the exited instance's
//! attempt number and times, and the attempt at which the current streak started, kept as
//! an annotation on each container), so an agent restart neither forgets nor resets it.

use std::time::Duration;

use podvisor_cri::{ContainerState, ContainerStatus};

/// The attempt from which crash-loop backoff counts (reset after a long run).
pub(crate) const BACKOFF_BASE: &str = "podvisor.io/backoff-base";

/// First restart at once, then 10 s doubling to 5 min; a container that ran 10 minutes
/// starts over.
pub(crate) const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(300);
pub(crate) const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);

fn ran(c: &ContainerStatus) -> Duration {
    Duration::from_nanos((c.finished_at - c.started_at).max(0).unsigned_abs())
}

fn base_of(c: &ContainerStatus) -> u32 {
    c.annotations
        .get(BACKOFF_BASE)
        .and_then(|b| b.parse().ok())
        .unwrap_or(0)
}

/// Crash-loop backoff owed by an exited container before its next start.
pub(crate) fn crash_backoff(exited: &ContainerStatus) -> Duration {
    if ran(exited) >= BACKOFF_RESET_AFTER {
        return Duration::ZERO;
    }
    match exited.attempt.saturating_sub(base_of(exited)) {
        0 => Duration::ZERO,
        n => BACKOFF_INITIAL
            .saturating_mul(1u32.checked_shl(n - 1).unwrap_or(u32::MAX))
            .min(BACKOFF_MAX),
    }
}

/// How much of an exited instance's crash-loop backoff is left at `now` (nanoseconds
/// since the epoch); `None` once it ran out.
pub(crate) fn backoff_left(exited: &ContainerStatus, now: i64) -> Option<Duration> {
    if exited.state != ContainerState::Exited {
        return None;
    }
    let owed = i64::try_from(crash_backoff(exited).as_nanos()).unwrap_or(i64::MAX);
    let left = exited.finished_at.saturating_add(owed).saturating_sub(now);
    u64::try_from(left)
        .ok()
        .filter(|&n| n > 0)
        .map(Duration::from_nanos)
}

/// The attempt number and backoff base for a container's next instance.
pub(crate) fn next_attempt(previous: Option<&ContainerStatus>) -> (u32, u32) {
    let Some(p) = previous else { return (0, 0) };
    let attempt = p.attempt + 1;
    let base = if p.state == ContainerState::Exited && ran(p) >= BACKOFF_RESET_AFTER {
        attempt
    } else {
        base_of(p)
    };
    (attempt, base)
}
