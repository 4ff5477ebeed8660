//! What one housekeeping pass decides (the kubelet's `HandlePodCleanups`), from the
//! desired pods, the pod workers' states and the runtime's listing: plain data, so every
//! rule is tested without actors or a runtime. The sync loop carries the plan out.

use std::collections::{BTreeMap, HashSet};

use podvisor_core::{PodUid, SharedPod};
use podvisor_cri::labels;

use super::pods::{PodManager, deleted};
use crate::protocol::updates::{
    KillPodOptions, PodWorkerState, RuntimePod, UpdatePodOptions, UpdateType,
};

#[derive(Default)]
pub(crate) struct Plan {
    /// Updates for the pod workers, in order.
    pub updates: Vec<UpdatePodOptions>,
    /// Removed pods the workers are done with: their status and cache entry go.
    pub forget: Vec<PodUid>,
    /// Every UID whose status is still worth keeping (all others are dropped).
    pub retain: HashSet<PodUid>,
    /// UIDs whose directories must stay; `None` when the runtime could not be listed (a
    /// pod may still be running there with its volumes mounted: sweep nothing).
    pub keep_dirs: Option<HashSet<PodUid>>,
}

/// Decides one pass. `running` is the runtime's listing (`None` if it failed); `node` is
/// this agent's node name, which its runtime pods are labelled with.
pub(crate) fn plan(
    pods: &mut PodManager,
    states: &BTreeMap<PodUid, PodWorkerState>,
    running: Option<Vec<podvisor_cri::Pod>>,
    node: &str,
) -> Plan {
    let mut plan = Plan::default();
    pods.set_terminated(
        states
            .iter()
            .filter(|(_, s)| **s == PodWorkerState::Terminated)
            .map(|(uid, _)| uid.clone()),
    );
    // Level-driven repair: an update the dispatcher refused (a full mailbox) is not lost.
    // A desired pod it does not know is created; a removed pod it still runs is killed.
    // Duplicates of updates still queued there coalesce.
    for p in pods.desired() {
        if !states.contains_key(p.uid()) {
            plan.updates
                .push(UpdatePodOptions::new(UpdateType::Create, p));
        }
    }
    let unkilled: Vec<SharedPod> = pods
        .removed_pods()
        .filter(|p| states.get(p.uid()) == Some(&PodWorkerState::Syncing))
        .cloned()
        .collect();
    for p in unkilled {
        plan.updates.push(UpdatePodOptions::kill(
            deleted(&p),
            KillPodOptions::default(),
        ));
    }
    // A UID requested again while it was terminating may start now.
    for (uid, state) in states {
        if *state == PodWorkerState::TerminatedAndRecreated
            && let Some(p) = pods.get(uid).cloned()
        {
            plan.updates
                .push(UpdatePodOptions::new(UpdateType::Create, p));
        }
    }
    // Removed pods the workers no longer know are done.
    plan.forget = pods
        .removed()
        .filter(|uid| !states.contains_key(*uid))
        .cloned()
        .collect();
    for uid in &plan.forget {
        pods.forget_removed(uid);
    }
    // Statuses of pods nobody knows (remembered from before a restart, whose manifest
    // went away meanwhile) go too.
    plan.retain = pods.known_uids();
    plan.retain.extend(states.keys().cloned());
    let Some(running) = running else {
        return plan;
    };
    let mut keep = plan.retain.clone();
    keep.extend(running.iter().map(|rp| PodUid::from(rp.pod.uid.as_str())));
    plan.keep_dirs = Some(keep);
    // Runtime pods of this agent that no config and no worker knows: orphans.
    for rp in running {
        let rp = RuntimePod::new(rp);
        let uid = rp.uid();
        if labels::owned_by(rp.runtime(), node)
            && pods.get(uid).is_none()
            && !states.contains_key(uid)
        {
            plan.updates.push(UpdatePodOptions::runtime_kill(rp));
        }
    }
    plan
}

#[cfg(test)]
#[path = "housekeeping_tests.rs"]
mod tests;
