//! What a mailbox counts. Counters are plain atomics (exact under any number of senders);
//! the derived figures (queued, oldest age) come from the queue itself under its lock.

use std::sync::atomic::{AtomicU64, Ordering::Release};

use serde::Serialize;

use crate::histogram::LatencySummary;

#[derive(Default)]
pub(crate) struct Counters {
    /// Accepted into the queue.
    pub sent: AtomicU64,
    /// Refused at the send: queue full, or the actor stopped for good.
    pub rejected: AtomicU64,
    /// Handler returned.
    pub handled: AtomicU64,
    /// Was being handled when the actor crashed.
    pub failed: AtomicU64,
    /// Still queued when the actor stopped for good.
    pub dropped: AtomicU64,
    pub restarts: AtomicU64,
}

impl Counters {
    /// Release: a snapshot that reads a count with Acquire also sees what came before it
    /// (a message counted handled was counted sent first). Costs nothing on x86, where
    /// every read-modify-write is a full barrier.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Release);
    }
}

/// Where an actor is in its life, as its supervisor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Starting,
    Running,
    /// Crashed; a new instance starts after the backoff. Messages sent meanwhile wait.
    Restarting,
    /// Stopped for good; sends are refused.
    Stopped,
}

/// One mailbox at one moment, as the debug endpoint shows it. No message contents, ever:
/// only counts, times and type names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MailboxSnapshot {
    pub capacity: usize,
    pub sent: u64,
    pub handled: u64,
    pub queued: usize,
    /// Age of the message that has waited longest, in milliseconds (0 when empty; the
    /// clock ticks every 1–4 ms).
    pub oldest_queued_ms: f64,
    pub rejected: u64,
    pub failed: u64,
    pub dropped: u64,
    pub last_message: Option<&'static str>,
    /// Time in handlers. Every message is timed while the actor keeps up; during a burst
    /// one in 16 is, so `count` can be below `handled`.
    pub handle_time: LatencySummary,
    pub restarts: u64,
    pub last_panic: Option<String>,
    pub lifecycle: Lifecycle,
}
