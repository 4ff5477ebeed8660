//! What the PLEG shows of itself on the debug endpoint.

use serde::Serialize;
use tokio::time::Instant;

use super::{Pleg, PlegMode};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlegSummary {
    pub mode: PlegMode,
    pub healthy: bool,
    pub last_relist_unix_ms: Option<u64>,
    pub last_relist_ms: Option<f64>,
    pub pods_tracked: usize,
    pub awaiting_reinspection: usize,
    /// Pods whose inspection hung the runtime, inspected aside.
    pub slow_pods: usize,
    /// Whether the event stream is open (it may be, beside relisting, while probed).
    pub stream_open: bool,
    /// Whether the stream lost events lately, so relisting runs at the normal period.
    pub stream_lossy: bool,
    pub events_received: u64,
    /// Events for pods this node does not own.
    pub events_ignored: u64,
    /// Events settled from the statuses they carried, with no inspection of their pod.
    pub events_from_snapshots: u64,
    /// Pod workers' requests for an inspection after a start that the records already
    /// answered (the start's event came first).
    pub reinspections_spared: u64,
    /// Such requests waiting for their start's event.
    pub reinspections_awaiting_start: usize,
    /// Changes a relist found that the stream never delivered.
    pub events_lost: u64,
    /// Events waiting for their pod's inspection, and pods being inspected for theirs.
    pub events_waiting: usize,
    pub events_inspecting: usize,
}

impl Pleg {
    pub(super) fn summarize(&self) -> PlegSummary {
        PlegSummary {
            mode: self.mode,
            healthy: self.health.check().is_ok(),
            last_relist_unix_ms: self.last_relist.map(|(t, _)| t),
            last_relist_ms: self.last_relist.map(|(_, d)| (d * 1000.0).round() / 1000.0),
            pods_tracked: self.records.len(),
            awaiting_reinspection: self.reinspect.len(),
            slow_pods: self.slow.len(),
            stream_open: self.stream_opened.is_some(),
            stream_lossy: self.loss.is_lossy(Instant::now()),
            events_received: self.events_received,
            events_ignored: self.events_ignored,
            events_from_snapshots: self.events_from_snapshots,
            reinspections_spared: self.reinspections_spared,
            reinspections_awaiting_start: self.awaiting.len(),
            events_lost: self.loss.lost_total(),
            events_waiting: self.pending.depth().0,
            events_inspecting: self.pending.depth().1,
        }
    }
}
