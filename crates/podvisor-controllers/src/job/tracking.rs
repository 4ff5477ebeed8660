//! Counting finished pods exactly once: see `plan.rs` for the protocol (recorded as
//! uncounted, finalizer removed, then counted).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{Phase, PodExt};

use super::failure::{self, Verdict};
use super::plan::{Plan, tracked};

fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

/// What tracking found: the counts with the uncounted pods, and a reason to fail given by
/// the pod failure policy.
pub(super) struct Tracked {
    pub succeeded: i32,
    pub failed: i32,
    pub fail: Option<String>,
}

/// Records finished pods, folds those already untracked into the counts.
pub(super) fn track(job: &Job, pods: &[Arc<Pod>], s: &mut JobStatus, plan: &mut Plan) -> Tracked {
    let u = s
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let (mut ok, mut bad): (BTreeSet<String>, BTreeSet<String>) = (
        u.succeeded.iter().flatten().cloned().collect(),
        u.failed.iter().flatten().cloned().collect(),
    );
    let still_tracked = |id: &String| pods.iter().any(|p| uid(p) == *id && tracked(p));
    let (done_ok, done_bad) = (
        ok.iter().filter(|id| !still_tracked(id)).count(),
        bad.iter().filter(|id| !still_tracked(id)).count(),
    );
    s.succeeded = Some(s.succeeded.unwrap_or(0) + i32::try_from(done_ok).unwrap_or(0));
    s.failed = Some(s.failed.unwrap_or(0) + i32::try_from(done_bad).unwrap_or(0));
    ok.retain(|id| still_tracked(id));
    bad.retain(|id| still_tracked(id));
    let mut fail = None;
    for p in pods.iter().filter(|p| tracked(p) && p.is_terminal()) {
        let id = uid(p);
        if ok.contains(&id) || bad.contains(&id) {
            continue;
        }
        match (p.phase(), failure::verdict(job, p)) {
            (Some(Phase::Succeeded), _) => drop(ok.insert(id)),
            (_, Verdict::Ignore) => plan.untrack.push(p.clone()),
            (_, Verdict::FailJob(why)) => {
                fail = fail.or(Some(why));
                bad.insert(id);
            }
            (_, Verdict::Count) => drop(bad.insert(id)),
        }
    }
    plan.untrack.extend(
        pods.iter()
            .filter(|p| tracked(p) && (ok.contains(&uid(p)) || bad.contains(&uid(p))))
            .cloned(),
    );
    let list = |set: BTreeSet<String>| (!set.is_empty()).then(|| set.into_iter().collect());
    let n = |set: &BTreeSet<String>| i32::try_from(set.len()).unwrap_or(0);
    let counts = Tracked {
        succeeded: s.succeeded.unwrap_or(0) + n(&ok),
        failed: s.failed.unwrap_or(0) + n(&bad),
        fail,
    };
    *u = UncountedTerminatedPods {
        succeeded: list(ok),
        failed: list(bad),
    };
    counts
}
