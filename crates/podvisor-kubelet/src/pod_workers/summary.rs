//! What the debug endpoint shows of the pod workers. The dispatcher, not the worker, holds
//! each pod's state, so it publishes each worker's summary on the worker's mailbox.

use std::fmt;

use serde::{Serialize, Serializer};

use super::lifecycle::Cause;
use super::status::PodSyncStatus;
use crate::protocol::updates::UpdateType;
use crate::protocol::work::{WorkKind, WorkResult};

/// One pod worker, as the dispatcher sees it. Built on every update, serialised only when
/// the debug endpoint reads it, so it holds values rather than formatted text.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerSummary {
    pub phase: &'static str,
    /// Why it is terminating (deleted, evicted, orphaned, ...), once it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<&'static str>,
    /// How long ago its termination was asked for, while it is terminating: a termination
    /// that keeps failing shows here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminating_for_s: Option<u64>,
    pub working: bool,
    pub pending: Option<UpdateType>,
    pub grace_period: Option<i64>,
    pub restart_requested: bool,
    pub last_result: Option<LastResult>,
    pub last_result_unix_ms: Option<u64>,
}

impl WorkerSummary {
    pub(crate) fn of(s: &PodSyncStatus, last_result_unix_ms: Option<u64>) -> Self {
        let last_result = s.last_result().map(|(kind, result)| LastResult {
            kind: *kind,
            result: result.clone(),
        });
        Self {
            phase: s.lifecycle().name(),
            cause: s.cause().map(Cause::name),
            terminating_for_s: s.terminating_since().map(|t| t.elapsed().as_secs()),
            working: s.is_working(),
            pending: s.pending_update(),
            grace_period: s.grace_period().map(|g| g.seconds()),
            restart_requested: s.restart_requested(),
            last_result,
            last_result_unix_ms,
        }
    }
}

/// How the worker's last work ended, shown as "Sync ok", "Terminate failed: <error>", ...
#[derive(Debug, Clone)]
pub struct LastResult {
    kind: WorkKind,
    result: WorkResult,
}

impl fmt::Display for LastResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind;
        match &self.result {
            WorkResult::Ok(_) => write!(f, "{kind:?} ok"),
            WorkResult::Failed(e) => write!(f, "{kind:?} failed: {e}"),
            WorkResult::Cancelled => write!(f, "{kind:?} cancelled"),
        }
    }
}

impl Serialize for LastResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatcherSummary {
    pub pods: usize,
    pub workers: usize,
    /// Pods with a resync or retry scheduled.
    pub scheduled: usize,
}
