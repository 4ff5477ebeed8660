//! Wall-clock deadlines on tokio's clock. Deadlines in the store are wall-clock times (a
//! taint's `timeAdded`); timers run on tokio's monotonic clock. A `WallClock` anchors one
//! to the other once, so wall times convert to instants without a jump in the system clock
//! firing or holding back every timer, and so tests on paused tokio time are exact.

use std::time::Duration;

use tokio::time::Instant;

/// The longest a timer is set for; a deadline further away is re-checked then (tokio's
/// timer wheel cannot hold more than about two years).
pub const MAX_TIMER: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    wall_ms: u64,
    at: Instant,
}

impl WallClock {
    /// The system clock, anchored now.
    pub fn system() -> Self {
        Self::anchored(podvisor_core::time::now_unix_ms())
    }

    /// A clock that reads `wall_ms` now (tests pick their wall time).
    pub fn anchored(wall_ms: u64) -> Self {
        Self {
            wall_ms,
            at: Instant::now(),
        }
    }

    /// Milliseconds since the epoch, now.
    pub fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.at.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.wall_ms.saturating_add(elapsed)
    }

    /// When a timer for wall time `ms` must fire: now if it has passed, at most
    /// [`MAX_TIMER`] ahead.
    pub fn instant(&self, ms: u64) -> Instant {
        let ahead = Duration::from_millis(ms.saturating_sub(self.now_ms()));
        Instant::now() + ahead.min(MAX_TIMER)
    }
}
