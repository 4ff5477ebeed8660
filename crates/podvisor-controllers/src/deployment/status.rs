//! A Deployment's status from its ReplicaSets (Kubernetes' `calculateStatus` and
//! `syncRolloutStatus`): replica counts, and the `Available` and `Progressing` conditions,
//! the latter timing out after `progressDeadlineSeconds` without progress.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::util::{self, available, max_unavailable, ready, replicas, status_replicas};
use super::world::World;

pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
const COMPLETE: &str = "NewReplicaSetAvailable";

/// What the sync found or did that the conditions tell.
#[derive(Debug, Default)]
pub struct Progress {
    pub found: Option<String>,
    pub created: Option<String>,
    pub revision: Option<String>,
    pub collision: bool,
}

fn condition<'a>(s: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    s.conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))
}

fn time(ms: i64) -> Time {
    podvisor_core::time::from_nanos(ms.saturating_mul(1_000_000))
        .unwrap_or_else(podvisor_core::time::now)
}

/// Sets a condition; the transition time moves only when the status does.
fn set(
    s: &mut DeploymentStatus,
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now_ms: i64,
) {
    let old = condition(s, type_).cloned();
    if let Some(o) = &old
        && o.status.as_deref() == Some(status)
        && o.reason.as_deref() == Some(reason)
        && o.message.as_deref() == Some(message.as_str())
    {
        return;
    }
    let transition = match &old {
        Some(o) if o.status.as_deref() == Some(status) => o.last_transition_time.clone(),
        _ => Some(time(now_ms)),
    };
    let c = DeploymentCondition {
        type_: Some(type_.into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(time(now_ms)),
        last_transition_time: transition,
    };
    let all = s.conditions.get_or_insert_with(Vec::new);
    all.retain(|c| c.type_.as_deref() != Some(type_));
    all.push(c);
}

/// Every replica updated, available and alone (`DeploymentComplete`).
pub fn complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let n = replicas(d);
    s.updated_replicas == Some(n)
        && s.replicas == Some(n)
        && s.available_replicas == Some(n)
        && s.observed_generation >= d.metadata.generation
}

/// Whether this status is progress over the stored one (`DeploymentProgressing`).
fn progressed(d: &Deployment, s: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas) - n(old.updated_replicas);
    let new_old = n(s.replicas) - n(s.updated_replicas);
    n(s.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(s.ready_replicas) > n(old.ready_replicas)
        || n(s.available_replicas) > n(old.available_replicas)
}

fn counts(d: &Deployment, w: &World, new: Option<&str>) -> DeploymentStatus {
    let available_now = util::sum(&w.sets, available);
    let total = util::sum(&w.sets, util::rs_replicas);
    let updated = new
        .and_then(|n| w.get(n))
        .map_or(0, |rs| status_replicas(rs));
    let old = d.status.clone().unwrap_or_default();
    DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(util::sum(&w.sets, status_replicas)),
        updated_replicas: Some(updated),
        ready_replicas: Some(util::sum(&w.sets, ready)),
        available_replicas: Some(available_now),
        unavailable_replicas: Some((total - available_now).max(0)),
        collision_count: old.collision_count,
        conditions: old.conditions,
        terminating_replicas: None,
    }
}

/// Sets the `Progressing` condition.
struct Progressing<'a> {
    s: &'a mut DeploymentStatus,
    now_ms: i64,
}

impl Progressing<'_> {
    fn set(&mut self, status: &str, reason: &str, message: String) {
        set(self.s, "Progressing", status, reason, message, self.now_ms);
    }

    fn reason(&self) -> Option<&str> {
        condition(self.s, "Progressing").and_then(|c| c.reason.as_deref())
    }

    /// Progress restarts the deadline's clock even when the message stays the same.
    fn touch(&mut self) {
        let all = self.s.conditions.iter_mut().flatten();
        if let Some(c) = all
            .into_iter()
            .find(|c| c.type_.as_deref() == Some("Progressing"))
        {
            c.last_update_time = Some(time(self.now_ms));
        }
    }
}

/// Paused, or resumed: the condition says so; whether paused.
fn pause_state(d: &Deployment, c: &mut Progressing<'_>) -> bool {
    let paused = d.spec.paused == Some(true);
    if paused {
        c.set("Unknown", "DeploymentPaused", "Deployment is paused".into());
    } else if c.reason() == Some("DeploymentPaused") {
        c.set(
            "Unknown",
            "DeploymentResumed",
            "Deployment is resumed".into(),
        );
    }
    paused
}

fn secs(n: i64) -> Duration {
    Duration::from_millis(u64::try_from(n).unwrap_or(0))
}

fn progressing(
    d: &Deployment,
    s: &mut DeploymentStatus,
    new: Option<&str>,
    p: &Progress,
    now_ms: i64,
) -> Option<Duration> {
    let deadline = d.spec.progress_deadline_seconds;
    let deadline_ms = i64::from(deadline.unwrap_or(600)) * 1000;
    let rs = new.unwrap_or_default();
    let is_complete = complete(d, s);
    let has_progressed = progressed(d, s);
    let mut c = Progressing { s, now_ms };
    if pause_state(d, &mut c) {
        return None;
    }
    if let Some(created) = &p.created {
        let message = format!("Created new replica set \"{created}\"");
        c.set("True", "NewReplicaSetCreated", message);
    } else if new.is_some() && c.reason().is_none() {
        c.set(
            "True",
            "FoundNewReplicaSet",
            format!("Found new replica set \"{rs}\""),
        );
    }
    // As `syncRolloutStatus`: a rollout that completed is not judged again until a new one
    // starts (one pod going unavailable later is no timeout); one that timed out stays so
    // unless it completes or progresses.
    let all_updated = c.s.replicas == c.s.updated_replicas;
    if all_updated && c.reason() == Some(COMPLETE) {
        return None;
    }
    if is_complete {
        let message = format!("ReplicaSet \"{rs}\" has successfully progressed.");
        c.set("True", COMPLETE, message);
        return None;
    }
    if has_progressed {
        c.set(
            "True",
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{rs}\" is progressing."),
        );
        c.touch();
        return Some(secs(deadline_ms + 1000));
    }
    if c.reason() == Some(TIMED_OUT) {
        return None;
    }
    let since = condition(c.s, "Progressing").and_then(|x| x.last_update_time.clone());
    let due = since.map(|t| t.0.as_millisecond() + deadline_ms)?;
    if due < now_ms {
        c.set(
            "False",
            TIMED_OUT,
            format!("ReplicaSet \"{rs}\" has timed out progressing."),
        );
        return None;
    }
    Some(secs(due - now_ms + 1000))
}

/// The status `d` should show once the World's writes are made, and when to look again.
pub fn compute(
    d: &Deployment,
    w: &World,
    new: Option<&str>,
    p: &Progress,
    now_ms: i64,
) -> (DeploymentStatus, Option<Duration>) {
    let mut s = counts(d, w, new);
    if p.collision {
        s.collision_count = Some(s.collision_count.unwrap_or(0) + 1);
    }
    let min = replicas(d) - max_unavailable(d);
    if s.available_replicas.unwrap_or(0) >= min {
        set(
            &mut s,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
            now_ms,
        );
    } else {
        set(
            &mut s,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
            now_ms,
        );
    }
    let failure = new.and_then(|n| w.get(n)).and_then(|rs| {
        let c = rs.status.as_ref()?.conditions.as_ref()?;
        c.iter()
            .find(|c| {
                c.type_.as_deref() == Some("ReplicaFailure") && c.status.as_deref() == Some("True")
            })
            .cloned()
    });
    match failure {
        Some(f) => set(
            &mut s,
            "ReplicaFailure",
            "True",
            f.reason.as_deref().unwrap_or("FailedCreate"),
            f.message.unwrap_or_default(),
            now_ms,
        ),
        None => {
            if let Some(all) = s.conditions.as_mut() {
                all.retain(|c| c.type_.as_deref() != Some("ReplicaFailure"));
            }
        }
    }
    let requeue = progressing(d, &mut s, new, p, now_ms);
    (s, requeue)
}

/// Whether `new` says anything the stored status does not (update times aside).
pub fn differs(d: &Deployment, new: &DeploymentStatus) -> bool {
    d.status.as_ref() != Some(new)
}
