//! Whether the runtime's event stream loses events, judged by the relists that keep
//! running beside it: plain data, so its rules are tested without an actor.
//!
//! A stream that delivers everything leaves a relist nothing to find: every container
//! change reached the PLEG as an event first. containerd 1.7 hands each event to one
//! subscriber only when there are several (containerd#7318: a second agent, or `crictl
//! events`, takes part of ours), and drops events when its buffer is full; neither is
//! announced. So a change a relist finds is *suspect*; an event for the same container
//! within `GRACE` means it was only in flight; none means the stream lost it. A lossy
//! stream is still consumed (what it delivers is reported at once) but relisting goes back
//! to the normal period, until `RECOVERY` passes without another loss.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use podvisor_cri::ContainerEventKind;

use crate::protocol::lifecycle::PlegEventKind;

/// A container and what happened to it.
type Change = (String, PlegEventKind);

/// How long an event may trail the change a relist saw (containerd emits it after its own
/// state is updated, and a busy runtime is slow to).
pub(crate) const GRACE: Duration = Duration::from_secs(5);
/// How long without a lost event before the stream is trusted again.
pub(crate) const RECOVERY: Duration = Duration::from_secs(300);

#[derive(Debug, Default)]
pub(crate) struct LossDetector {
    /// Containers whose change a relist saw first, with when the event is overdue.
    suspects: HashMap<Change, Instant>,
    /// Changes the stream delivered lately, with when.
    recent: HashMap<Change, Instant>,
    /// Which of a container's events this stream delivered (bits), since when.
    sequences: HashMap<String, (u8, Instant)>,
    last_loss: Option<Instant>,
    lost_total: u64,
}

impl LossDetector {
    /// A relist (or an inspection) saw container `id` undergo `kind`. If the stream said
    /// so within `GRACE` before, the relist only saw what the event said.
    pub(crate) fn relist_saw(&mut self, id: &str, kind: PlegEventKind, now: Instant) {
        let change = (id.to_string(), kind);
        if self.recent.get(&change).is_some_and(|at| *at + GRACE > now) {
            return;
        }
        self.suspects.entry(change).or_insert(now + GRACE);
    }

    /// The stream delivered an event saying container `id` underwent `kinds`.
    pub(crate) fn delivered(&mut self, id: &str, kinds: &[PlegEventKind], now: Instant) {
        for kind in kinds {
            let change = (id.to_string(), *kind);
            self.suspects.remove(&change);
            self.recent.insert(change, now);
        }
        // Only the last `GRACE` matters: a busy stream must not grow this without bound.
        if self.recent.len() > PRUNE_AT {
            self.recent.retain(|_, at| *at + GRACE > now);
        }
    }

    /// Whether suspects wait for a judgement.
    pub(crate) fn has_suspects(&self) -> bool {
        !self.suspects.is_empty()
    }

    /// Counts the suspects whose event is overdue as lost; returns how many were.
    pub(crate) fn judge(&mut self, now: Instant) -> usize {
        self.recent.retain(|_, at| *at + GRACE > now);
        let before = self.suspects.len();
        self.suspects.retain(|_, due| *due > now);
        let lost = before - self.suspects.len();
        if lost > 0 {
            self.last_loss = Some(now);
            self.lost_total += lost as u64;
        }
        lost
    }

    /// Whether the stream lost an event within `RECOVERY` of `now`.
    pub(crate) fn is_lossy(&self, now: Instant) -> bool {
        self.last_loss
            .is_some_and(|at| now.saturating_duration_since(at) < RECOVERY)
    }

    pub(crate) fn lost_total(&self) -> u64 {
        self.lost_total
    }

    /// A new stream: what the old one may have lost says nothing of it.
    pub(crate) fn forget_suspects(&mut self) {
        self.suspects.clear();
        self.sequences.clear();
    }

    /// Checks an event against the container's earlier events on this stream, which must
    /// come in order: created, started, stopped. A step missing that happened after the
    /// stream was live (`live_ns`, CRI nanoseconds) was lost. This catches a shared stream
    /// at the first container's start, before any relist could.
    pub(crate) fn check_sequence(
        &mut self,
        event: ContainerEventKind,
        container: &Times,
        live_ns: i64,
        now: Instant,
    ) -> bool {
        if event == ContainerEventKind::Deleted {
            self.sequences.remove(&container.id);
            return false;
        }
        let seen = self
            .sequences
            .entry(container.id.clone())
            .or_insert((0, now));
        let missing_created = seen.0 & CREATED == 0 && container.created_at > live_ns;
        let missing_started = event == ContainerEventKind::Stopped
            && seen.0 & STARTED == 0
            && container.started_at > live_ns;
        seen.0 |= match event {
            ContainerEventKind::Created => CREATED,
            ContainerEventKind::Started => CREATED | STARTED,
            _ => CREATED | STARTED | STOPPED,
        };
        let lost = match event {
            ContainerEventKind::Created => false,
            _ => missing_created || missing_started,
        };
        if lost {
            self.last_loss = Some(now);
            self.lost_total += 1;
        }
        // A container whose deletion was never streamed is forgotten after a while (looked
        // at only once the map is large: this runs for every event).
        if self.sequences.len() > PRUNE_AT {
            self.sequences
                .retain(|_, (_, since)| now.saturating_duration_since(*since) < FORGET);
        }
        lost
    }
}

/// A container's id and lifecycle times (CRI nanoseconds), as its inspection says.
#[derive(Debug, Clone, Default)]
pub(crate) struct Times {
    pub(crate) id: String,
    pub(crate) created_at: i64,
    pub(crate) started_at: i64,
}

impl From<&podvisor_cri::ContainerStatus> for Times {
    fn from(c: &podvisor_cri::ContainerStatus) -> Self {
        Self {
            id: c.id.clone(),
            created_at: c.created_at,
            started_at: c.started_at,
        }
    }
}

/// Size of a map above which its stale entries are dropped on insertion.
const PRUNE_AT: usize = 4096;

const CREATED: u8 = 1;
const STARTED: u8 = 2;
const STOPPED: u8 = 4;
/// How long a container's event history is kept without its deletion.
const FORGET: Duration = Duration::from_secs(3600);

#[cfg(test)]
mod tests {
    use super::*;
    use PlegEventKind::{ContainerDied as Died, ContainerStarted as Started};

    #[test]
    fn an_event_within_the_grace_clears_the_suspect() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        d.relist_saw("c1", Died, t0);
        assert!(d.has_suspects());
        d.delivered("c1", &[Died], t0 + GRACE / 2);
        assert_eq!(d.judge(t0 + GRACE * 2), 0);
        assert!(!d.is_lossy(t0 + GRACE * 2));
    }

    #[test]
    fn a_relist_that_sees_what_an_event_just_said_suspects_nothing() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        d.delivered("c1", &[Died], t0);
        d.relist_saw("c1", Died, t0 + Duration::from_millis(10));
        assert!(!d.has_suspects());
        // Another change of the same container is not what the event said.
        d.relist_saw("c1", Started, t0 + Duration::from_millis(10));
        assert!(d.has_suspects());
        d.delivered("c1", &[Started], t0 + Duration::from_millis(20));
        assert!(!d.has_suspects());
        // Long after, the same container changing unseen is suspect again.
        d.relist_saw("c1", Died, t0 + GRACE);
        assert!(d.has_suspects());
    }

    #[test]
    fn no_event_within_the_grace_is_a_loss_until_the_recovery_time_passes() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        d.relist_saw("c1", Died, t0);
        assert_eq!(d.judge(t0 + GRACE / 2), 0, "not overdue yet");
        let judged = t0 + GRACE;
        assert_eq!(d.judge(judged), 1);
        assert!(d.is_lossy(judged));
        assert!(d.is_lossy(judged + RECOVERY - Duration::from_secs(1)));
        assert!(!d.is_lossy(judged + RECOVERY));
        assert_eq!(d.lost_total(), 1);
        assert_eq!(d.judge(judged + GRACE), 0, "counted once");
    }

    #[test]
    fn a_second_sighting_keeps_the_first_deadline() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        d.relist_saw("c1", Died, t0);
        d.relist_saw("c1", Died, t0 + GRACE - Duration::from_millis(1));
        assert_eq!(d.judge(t0 + GRACE), 1);
    }

    fn container(created: i64, started: i64) -> Times {
        Times {
            id: "c1".into(),
            created_at: created,
            started_at: started,
        }
    }

    #[test]
    fn a_container_whose_start_was_not_streamed_shows_a_loss_when_it_stops() {
        use ContainerEventKind::*;
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        let c = container(100, 200);
        assert!(!d.check_sequence(Created, &c, 50, t0));
        assert!(d.check_sequence(Stopped, &c, 50, t0), "its start was lost");
        assert!(d.is_lossy(t0));
        assert_eq!(d.lost_total(), 1);
    }

    #[test]
    fn a_complete_sequence_or_steps_before_the_stream_are_no_loss() {
        use ContainerEventKind::*;
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        let c = container(100, 200);
        for e in [Created, Started, Stopped, Deleted] {
            assert!(!d.check_sequence(e, &c, 50, t0), "{e:?}");
        }
        // Created and started before the stream was live: only its stop can be streamed.
        let old = container(10, 20);
        assert!(!d.check_sequence(Stopped, &old, 50, t0));
        assert!(!d.is_lossy(t0));
    }

    #[test]
    fn a_start_without_its_creation_is_a_loss() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        assert!(d.check_sequence(ContainerEventKind::Started, &container(100, 200), 50, t0));
    }

    #[test]
    fn recent_events_are_pruned_on_a_busy_stream() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        for i in 0..=PRUNE_AT {
            d.delivered(&format!("c{i}"), &[Died], t0);
        }
        d.delivered("late", &[Died], t0 + GRACE);
        assert_eq!(d.recent.len(), 1, "only the one within the grace is kept");
    }

    #[test]
    fn a_new_stream_forgets_what_the_old_one_owed() {
        let t0 = Instant::now();
        let mut d = LossDetector::default();
        d.relist_saw("c1", Died, t0);
        d.forget_suspects();
        assert_eq!(d.judge(t0 + GRACE), 0);
    }
}
