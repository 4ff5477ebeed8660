//! The statuses a container event carries (containerd 1.7 and 2.x send the container's
//! sandbox and that sandbox's containers as they were when the event was made). The
//! kubelet's evented PLEG caches them as the pod's status; here they replace the pod's
//! inspection when they are the pod's whole status, which is when the pod has one sandbox
//! (older sandboxes and their containers are not in a snapshot) and it is ready (a new
//! sandbox is made only after the old one stopped, so no newer one can be missing). The
//! status is stored as of the event's making, so a relist or inspection begun later keeps
//! precedence in the cache. Anything else is inspected as before (`pending.rs`).

use std::time::Duration;

use actix::prelude::*;
use podvisor_core::PodUid;
use podvisor_cri::{PodStatus, SandboxState};
use tokio::time::Instant;

use super::Pleg;
use super::pending::Waiting;

/// A snapshot older than this on arrival (a stream that lags, or clocks that disagree)
/// is not trusted to say how the pod is: the pod is inspected.
pub(super) const MAX_AGE: Duration = Duration::from_secs(5);

/// What the PLEG's records say of a pod's sandboxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Known<'a> {
    /// The pod's latest record shows this one sandbox.
    Only(&'a str),
    /// The PLEG has no record of the pod (it is new, or the PLEG has not relisted yet).
    Unknown,
    /// Several sandboxes, or none.
    Other,
}

/// Whether `snapshot`, made `age` ago, is the whole status of its pod: one ready sandbox,
/// the one the records show, or for a pod they do not know, its first (attempt 0: no
/// sandbox came before it, and a next one is made only once it has stopped).
pub(super) fn suffices(snapshot: &PodStatus, known: Known<'_>, age: Duration) -> bool {
    let [sandbox] = snapshot.sandboxes.as_slice() else {
        return false;
    };
    let whole = match known {
        Known::Only(id) => id == sandbox.id,
        Known::Unknown => sandbox.attempt == 0,
        Known::Other => false,
    };
    whole && sandbox.state == SandboxState::Ready && age <= MAX_AGE
}

impl Pleg {
    /// Settles the event from its snapshot if that is the pod's whole status; gives the
    /// event back otherwise.
    pub(super) fn settle_from_snapshot(
        &mut self,
        uid: PodUid,
        event: Waiting,
        snapshot: Option<Box<PodStatus>>,
        made_at: i64,
        ctx: &mut Context<Self>,
    ) -> Option<(PodUid, Waiting)> {
        let age = self.runtime.age_of(made_at);
        let known = match self.records.only_sandbox(&uid) {
            Some(id) => Known::Only(id),
            None if self.records.contains(&uid) => Known::Other,
            None => Known::Unknown,
        };
        let usable = |s: &PodStatus| self.config.event_snapshots && suffices(s, known, age);
        let Some(snapshot) = snapshot.filter(|s| usable(s)) else {
            return Some((uid, event));
        };
        let at = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
        self.events_from_snapshots += 1;
        self.settle_events(uid, &[event], *snapshot, at, ctx);
        None
    }
}

#[cfg(test)]
mod tests {
    use podvisor_cri::SandboxStatus;

    use super::*;

    fn snapshot(sandboxes: &[(&str, SandboxState)]) -> PodStatus {
        let sandboxes = sandboxes
            .iter()
            .map(|(id, state)| SandboxStatus {
                id: (*id).into(),
                pod: Default::default(),
                attempt: id.trim_start_matches('s').parse().unwrap(),
                state: *state,
                created_at: 1,
                ip: None,
                additional_ips: Vec::new(),
                host_network: false,
                labels: Default::default(),
                annotations: Default::default(),
            })
            .collect();
        PodStatus::assemble("u", sandboxes, Vec::new())
    }

    #[test]
    fn a_snapshot_is_the_status_only_of_a_pod_with_one_ready_sandbox_the_records_know() {
        use Known::*;
        let fresh = Duration::from_millis(3);
        let ready = snapshot(&[("s1", SandboxState::Ready)]);
        assert!(suffices(&ready, Only("s1"), fresh));
        // A sandbox the records do not know (a new one), or a pod with older sandboxes.
        assert!(!suffices(&ready, Only("s0"), fresh));
        assert!(!suffices(&ready, Other, fresh));
        // A pod the records do not know: its first sandbox (attempt 0) is all it has; a
        // later attempt may have older sandboxes beside it.
        assert!(!suffices(&ready, Unknown, fresh));
        assert!(suffices(
            &snapshot(&[("s0", SandboxState::Ready)]),
            Unknown,
            fresh
        ));
        // A stopped sandbox: a newer one may exist that the snapshot does not show.
        let stopped = snapshot(&[("s1", SandboxState::NotReady)]);
        assert!(!suffices(&stopped, Only("s1"), fresh));
        let first_stopped = snapshot(&[("s0", SandboxState::NotReady)]);
        assert!(!suffices(&first_stopped, Unknown, fresh));
        assert!(!suffices(&snapshot(&[]), Only("s1"), fresh));
        // An old snapshot says too little of now.
        assert!(!suffices(
            &ready,
            Only("s1"),
            MAX_AGE + Duration::from_millis(1)
        ));
    }
}
