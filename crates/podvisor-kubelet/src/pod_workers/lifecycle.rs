//! A pod's lifecycle in the pod workers, as a type: syncing → terminating → terminated →
//! finished, one way. Each move is a method that refuses what the lifecycle forbids (the
//! model is youki's container state with its `can_start`/`can_kill`), so "one way" and
//! "the grace period only shrinks" hold by construction rather than by convention.

use std::fmt;

use podvisor_core::GracePeriod;
use tokio::time::Instant;

use crate::protocol::work::WorkKind;

/// Why a pod is being terminated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Its deletion was requested (a deletion timestamp, or its config went away).
    Deleted,
    /// It is known only from the runtime: no config holds it.
    Orphaned,
    /// Killed to free the node's resources.
    Evicted,
    /// Killed for another reason.
    Killed,
    /// It reached a terminal phase: everything in it is done for good.
    Completed,
}

impl Cause {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Deleted => "deleted",
            Self::Orphaned => "orphaned",
            Self::Evicted => "evicted",
            Self::Killed => "killed",
            Self::Completed => "completed",
        }
    }
}

/// What a termination was asked with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Termination {
    pub cause: Cause,
    pub since: Instant,
    pub grace: GracePeriod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Syncing,
    Terminating(Termination),
    /// Everything is stopped; the cleanup (the terminated sync) is still to run.
    Terminated(Termination),
    /// Nothing is left to do. `None` for a pod that was done before the pod workers ever
    /// saw it.
    Finished(Option<Termination>),
}

/// A move the lifecycle does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a pod that is {from} cannot {verb}")]
pub(crate) struct InvalidMove {
    pub from: &'static str,
    pub verb: &'static str,
}

impl Lifecycle {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Syncing => "syncing",
            Self::Terminating(_) => "terminating",
            Self::Terminated(_) => "terminated",
            Self::Finished(_) => "finished",
        }
    }

    fn refuse(&self, verb: &'static str) -> InvalidMove {
        InvalidMove {
            from: self.name(),
            verb,
        }
    }

    /// Syncing → terminating.
    pub(crate) fn terminate(&mut self, termination: Termination) -> Result<(), InvalidMove> {
        match self {
            Self::Syncing => {
                *self = Self::Terminating(termination);
                Ok(())
            }
            _ => Err(self.refuse("start terminating")),
        }
    }

    /// A terminating pod's grace period becomes `candidate` if that is shorter; answers
    /// whether it shrank.
    pub(crate) fn shrink_grace(&mut self, candidate: GracePeriod) -> Result<bool, InvalidMove> {
        match self {
            Self::Terminating(t) => {
                let before = t.grace;
                t.grace = before.tightened(candidate);
                Ok(t.grace != before)
            }
            _ => Err(self.refuse("change its grace period")),
        }
    }

    /// Terminating → terminated: everything is stopped.
    pub(crate) fn stopped(&mut self) -> Result<(), InvalidMove> {
        match *self {
            Self::Terminating(termination) => {
                *self = Self::Terminated(termination);
                Ok(())
            }
            _ => Err(self.refuse("become terminated")),
        }
    }

    /// Terminating or terminated → finished. A terminating pod finishes directly when
    /// there is no cleanup to run (an orphan, or a static pod that never started).
    pub(crate) fn finish(&mut self) -> Result<(), InvalidMove> {
        match *self {
            Self::Terminating(t) | Self::Terminated(t) => {
                *self = Self::Finished(Some(t));
                Ok(())
            }
            _ => Err(self.refuse("finish")),
        }
    }

    /// The work an update becomes if delivered now; `None` once finished.
    pub(crate) fn work_kind(&self) -> Option<WorkKind> {
        match self {
            Self::Syncing => Some(WorkKind::Sync),
            Self::Terminating(_) => Some(WorkKind::Terminating),
            Self::Terminated(_) => Some(WorkKind::Terminated),
            Self::Finished(_) => None,
        }
    }

    pub(crate) fn termination_requested(&self) -> bool {
        !matches!(self, Self::Syncing)
    }

    pub(crate) fn is_terminated(&self) -> bool {
        matches!(self, Self::Terminated(_) | Self::Finished(_))
    }

    pub(crate) fn is_finished(&self) -> bool {
        matches!(self, Self::Finished(_))
    }

    pub(crate) fn termination(&self) -> Option<&Termination> {
        match self {
            Self::Syncing => None,
            Self::Terminating(t) | Self::Terminated(t) => Some(t),
            Self::Finished(t) => t.as_ref(),
        }
    }

    /// The grace period in force while terminating.
    pub(crate) fn grace(&self) -> Option<GracePeriod> {
        match self {
            Self::Terminating(t) => Some(t.grace),
            _ => None,
        }
    }
}

impl fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
