//! One sync of a Job, planned from its pods (Kubernetes' `syncJob`), as a plain function:
//!
//! - **tracking**: each pod carries the `batch.kubernetes.io/job-tracking` finalizer, so a
//!   finished pod cannot vanish before it is counted. A finished pod's UID is first
//!   written into `status.uncountedTerminatedPods`, then its finalizer goes, then (next
//!   sync) it moves into `succeeded` or `failed`: a crash between any two steps loses no
//!   count and counts nothing twice;
//! - **failure**: the pod failure policy (`failure.rs`), then `backoffLimit` (container
//!   restarts count too under `OnFailure`), then `activeDeadlineSeconds`: the Job's active
//!   pods are deleted (`FailureTarget`), and it is `Failed` once none runs;
//! - **success**: `completions` succeeded pods (without `completions`: one, and none left
//!   running), `SuccessCriteriaMet`, then `Complete` with `completionTime`;
//! - otherwise as many pods as `parallelism` and the remaining completions allow, replacing
//!   failed ones after the backoff; `suspend` deletes them; a finished Job is deleted
//!   `ttlSecondsAfterFinished` after it finished.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{Phase, PodExt};

use super::failure;
use super::tracking::{Tracked, track};

pub const TRACKING: &str = "batch.kubernetes.io/job-tracking";

#[derive(Debug, Default)]
pub struct Plan {
    pub status: JobStatus,
    /// Pods whose tracking finalizer goes (after the status is written).
    pub untrack: Vec<Arc<Pod>>,
    pub create: usize,
    pub delete: Vec<Arc<Pod>>,
    /// Past `ttlSecondsAfterFinished`.
    pub delete_job: bool,
    pub requeue: Option<Duration>,
    /// `(warning, reason, message)` for events.
    pub events: Vec<(bool, &'static str, String)>,
}

pub fn tracked(p: &Pod) -> bool {
    p.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING)
}

fn is_ready(p: &Pod) -> bool {
    let c = p.status.as_ref().and_then(|s| s.conditions.as_ref());
    c.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn condition<'a>(s: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    let all = s.conditions.as_ref()?;
    all.iter().find(|c| c.type_ == type_ && c.status == "True")
}

/// Complete or Failed.
pub fn finished(s: &JobStatus) -> Option<&JobCondition> {
    condition(s, "Complete").or_else(|| condition(s, "Failed"))
}

fn time(ms: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    let t = podvisor_core::time::from_nanos(ms.saturating_mul(1_000_000));
    t.unwrap_or_else(podvisor_core::time::now)
}

fn set(s: &mut JobStatus, type_: &str, status: &str, reason: &str, message: &str, now_ms: i64) {
    let all = s.conditions.get_or_insert_with(Vec::new);
    if let Some(c) = all.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status {
            c.last_transition_time = Some(time(now_ms));
        }
        c.status = status.into();
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        c.last_probe_time = Some(time(now_ms));
        return;
    }
    all.push(JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(time(now_ms)),
        last_transition_time: Some(time(now_ms)),
    });
}

/// A finished Job: its pods lose their finalizers; it goes once its TTL has passed.
fn after_finish(job: &Job, pods: &[Arc<Pod>], done_ms: i64, now_ms: i64, plan: &mut Plan) {
    plan.untrack = pods.iter().filter(|p| tracked(p)).cloned().collect();
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished);
    if let Some(ttl) = ttl {
        let due = done_ms + i64::from(ttl) * 1000;
        if now_ms >= due {
            plan.delete_job = true;
        } else {
            plan.requeue = Some(Duration::from_millis(
                u64::try_from(due - now_ms).unwrap_or(0),
            ));
        }
    }
}

/// One sync's view: the Job, its pods, the active ones, the counts.
struct View<'a> {
    job: &'a Job,
    pods: &'a [Arc<Pod>],
    active: Vec<Arc<Pod>>,
    t: Tracked,
    may_manage: bool,
    now_ms: i64,
}

impl View<'_> {
    fn terminating(&self) -> usize {
        self.pods
            .iter()
            .filter(|p| p.is_deleted() && !p.is_terminal())
            .count()
    }

    /// Why the Job fails, if it does: decided already, the pod failure policy,
    /// `backoffLimit`, the deadline.
    fn failure_reason(&self, s: &JobStatus, plan: &mut Plan) -> Option<(&'static str, String)> {
        let (job, t, active, now_ms) = (self.job, &self.t, &self.active, self.now_ms);
        if let Some(c) = condition(s, "FailureTarget") {
            // Decided once, for good: the reason it was decided for may be gone by now.
            let reason = match c.reason.as_deref() {
                Some("PodFailurePolicy") => "PodFailurePolicy",
                Some("DeadlineExceeded") => "DeadlineExceeded",
                _ => "BackoffLimitExceeded",
            };
            return Some((reason, c.message.clone().unwrap_or_default()));
        }
        if let Some(why) = &t.fail {
            return Some(("PodFailurePolicy", why.clone()));
        }
        let spec = job.spec.clone().unwrap_or_default();
        let on_failure = spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.as_deref())
            == Some("OnFailure");
        let limit = spec.backoff_limit.unwrap_or(6);
        // Under OnFailure the kubelet restarts failed containers in place: their restarts
        // (init containers' too) are the failures, at the limit already.
        let restarts: i32 = active
            .iter()
            .flat_map(|p| {
                p.status.iter().flat_map(|s| {
                    let init = s.init_container_statuses.iter().flatten();
                    s.container_statuses.iter().flatten().chain(init)
                })
            })
            .map(|c| c.restart_count)
            .sum();
        let restarted_out = on_failure && restarts >= limit.max(1);
        if t.failed > limit || restarted_out {
            return Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit".into(),
            ));
        }
        let started = s.start_time.as_ref().map(|t| t.0.as_millisecond());
        if let (Some(deadline), Some(start)) = (spec.active_deadline_seconds, started) {
            let due = start + deadline * 1000;
            if now_ms >= due {
                return Some((
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline".into(),
                ));
            }
            plan.requeue = Some(Duration::from_millis(
                u64::try_from(due - now_ms).unwrap_or(0),
            ));
        }
        None
    }

    /// Creates or deletes toward `wanted`, replacing failures only after the backoff.
    fn manage(&self, plan: &mut Plan) {
        let (job, pods, active, t, now_ms) =
            (self.job, self.pods, &self.active, &self.t, self.now_ms);
        // A Job being deleted runs nothing more: its pods go with it.
        let Some(want) =
            wanted(job, t.succeeded).filter(|_| job.metadata.deletion_timestamp.is_none())
        else {
            return;
        };
        let want = usize::try_from(want).unwrap_or(0);
        let wait_terminating = job
            .spec
            .as_ref()
            .and_then(|s| s.pod_replacement_policy.as_deref())
            == Some("Failed");
        let running = active.len()
            + if wait_terminating {
                self.terminating()
            } else {
                0
            };
        if !self.may_manage {
            return;
        }
        if want < active.len() {
            plan.delete = surplus(active, active.len() - want);
            return;
        }
        if want <= running {
            return;
        }
        let last_failure = pods
            .iter()
            .filter(|p| p.phase() == Some(Phase::Failed))
            .filter_map(|p| failure::failed_at_ms(p))
            .max();
        if let Some(last) = last_failure {
            let ready_at =
                last + i64::try_from(failure::backoff(t.failed).as_millis()).unwrap_or(0);
            if now_ms < ready_at {
                plan.requeue = Some(Duration::from_millis(
                    u64::try_from(ready_at - now_ms).unwrap_or(0),
                ));
                return;
            }
        }
        plan.create = want - running;
    }

    /// Fail, succeed, or run pods.
    fn decide(&self, s: &mut JobStatus, plan: &mut Plan) {
        let (active, now_ms) = (&self.active, self.now_ms);
        let settled = active.is_empty() && self.terminating() == 0 && !has_uncounted(s);
        if let Some((reason, message)) = self.failure_reason(s, plan) {
            if condition(s, "FailureTarget").is_none() {
                set(s, "FailureTarget", "True", reason, &message, now_ms);
                plan.events.push((true, reason, message.clone()));
            }
            plan.delete = active.clone();
            if settled {
                set(s, "Failed", "True", reason, &message, now_ms);
            }
            return;
        }
        let completions = self.job.spec.as_ref().and_then(|s| s.completions);
        let met = match completions {
            Some(c) => self.t.succeeded >= c,
            None => self.t.succeeded > 0 && active.is_empty(),
        };
        if !met {
            self.manage(plan);
            return;
        }
        let why = "Reached expected number of succeeded pods";
        if condition(s, "SuccessCriteriaMet").is_none() {
            set(
                s,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                why,
                now_ms,
            );
        }
        plan.delete = active.clone();
        if settled {
            set(s, "Complete", "True", "CompletionsReached", why, now_ms);
            s.completion_time = Some(time(now_ms));
            plan.events
                .push((false, "Completed", "Job completed".into()));
        }
    }
}

fn has_uncounted(s: &JobStatus) -> bool {
    let u = s.uncounted_terminated_pods.as_ref();
    u.is_some_and(|u| u.succeeded.is_some() || u.failed.is_some())
}

/// Pods to delete when fewer should run: not ready first, then the newest.
fn surplus(active: &[Arc<Pod>], n: usize) -> Vec<Arc<Pod>> {
    let mut v = active.to_vec();
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    v.sort_by_key(|p| (is_ready(p), std::cmp::Reverse(created(p))));
    v.truncate(n);
    v
}

/// How many pods should run now.
/// `None`: leave the pods as they are (a work-queue Job, without `completions`, once one
/// pod succeeded: the others finish their work, none is added).
fn wanted(job: &Job, succeeded: i32) -> Option<i32> {
    let spec = job.spec.as_ref();
    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1);
    match spec.and_then(|s| s.completions) {
        Some(c) => Some(parallelism.min(c - succeeded).max(0)),
        None if succeeded == 0 => Some(parallelism),
        None => None,
    }
}

/// Plans one sync of `job` given the pods it controls (`may_manage`: no creates or
/// deletes of an earlier sync still unseen).
pub fn plan(job: &Job, pods: &[Arc<Pod>], may_manage: bool, now_ms: i64) -> Plan {
    let mut plan = Plan::default();
    let old = job.status.clone().unwrap_or_default();
    if let Some(done) = finished(&old) {
        let at = done
            .last_transition_time
            .as_ref()
            .map_or(now_ms, |t| t.0.as_millisecond());
        after_finish(job, pods, at, now_ms, &mut plan);
        plan.status = old;
        return plan;
    }
    let mut s = old.clone();
    let t = track(job, pods, &mut s, &mut plan);
    let active: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| !p.is_terminal() && !p.is_deleted())
        .cloned()
        .collect();
    let view = View {
        job,
        pods,
        active,
        t,
        may_manage,
        now_ms,
    };
    let active = &view.active;
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    if suspended {
        set(
            &mut s,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            now_ms,
        );
        s.start_time = None;
        plan.delete = active.clone();
    } else {
        if condition(&s, "Suspended").is_some() {
            set(
                &mut s,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                now_ms,
            );
        }
        s.start_time = s.start_time.clone().or_else(|| Some(time(now_ms)));
        view.decide(&mut s, &mut plan);
    }
    let n = |x: usize| Some(i32::try_from(x).unwrap_or(0));
    s.active = n(active.len());
    s.ready = n(active.iter().filter(|p| is_ready(p)).count());
    s.terminating = n(view.terminating());
    plan.status = tidy(s, &old);
    plan
}

/// Kubernetes' counts are plain ints: a zero is not written; nor is an empty list of
/// uncounted pods that was not there before.
fn tidy(mut s: JobStatus, old: &JobStatus) -> JobStatus {
    for count in [&mut s.active, &mut s.succeeded, &mut s.failed] {
        if *count == Some(0) {
            *count = None;
        }
    }
    if !has_uncounted(&s) && old.uncounted_terminated_pods.is_none() {
        s.uncounted_terminated_pods = None;
    }
    s
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
