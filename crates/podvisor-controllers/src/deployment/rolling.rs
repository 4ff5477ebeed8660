//! The steps of a rollout on the World (Kubernetes' `rolling.go`, `recreate.go` and
//! `sync.go`'s scaling): one sync takes one step (scale the new ReplicaSet up, else the old
//! ones down), and the next sync, woken by what that step changed, takes the next.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::proportion;
use super::util::{
    self, DESIRED_REPLICAS, available, max_surge, max_unavailable, replicas, rs_replicas,
};
use super::world::World;

fn name(rs: &ReplicaSet) -> String {
    rs.metadata.name.clone().unwrap_or_default()
}

/// The old ReplicaSets, from the World (their replicas as scaled so far), oldest first.
fn olds(w: &World, new: Option<&str>) -> Vec<Arc<ReplicaSet>> {
    let mut out: Vec<_> = w
        .sets
        .iter()
        .filter(|rs| Some(name(rs).as_str()) != new)
        .cloned()
        .collect();
    util::by_age(&mut out);
    out
}

/// The new ReplicaSet's next size (`NewRSNewReplicas`): all of them for Recreate; for a
/// rolling update, as many more as the surge allows, up to the replicas.
pub fn new_rs_replicas(d: &Deployment, w: &World, new_current: i32) -> i32 {
    let want = replicas(d);
    if util::is_recreate(d) {
        return want;
    }
    let current = util::sum(&w.sets, util::rs_replicas);
    let max_total = want + max_surge(d);
    if current >= max_total {
        return new_current;
    }
    new_current + (max_total - current).min(want - new_current).max(0)
}

/// Scales the new ReplicaSet towards the replicas; whether it scaled.
pub fn reconcile_new(d: &Deployment, w: &mut World, new: &str) -> bool {
    let Some(rs) = w.get(new) else { return false };
    let current = rs_replicas(rs);
    let want = replicas(d);
    if current == want {
        return false;
    }
    let to = if current > want {
        want
    } else {
        new_rs_replicas(d, w, current)
    };
    w.scale(new, to, d)
}

/// Scales old ReplicaSets down as far as availability allows: first their unavailable
/// pods, then available ones while `replicas - maxUnavailable` stay available.
pub fn reconcile_old(d: &Deployment, w: &mut World, new: &str) -> bool {
    let old = olds(w, Some(new));
    if util::sum(&old, rs_replicas) == 0 {
        return false;
    }
    let all = util::sum(&w.sets, rs_replicas);
    let min_available = replicas(d) - max_unavailable(d);
    let new_unavailable = w.get(new).map_or(0, |rs| rs_replicas(rs) - available(rs));
    let max_scaled_down = all - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return false;
    }
    let cleaned = cleanup_unhealthy(d, w, &old, max_scaled_down);
    let old = olds(w, Some(new));
    let scaled = scale_down_available(d, w, &old, min_available);
    cleaned + scaled > 0
}

/// Scales old ReplicaSets down by their unavailable pods, at most `max` in all.
fn cleanup_unhealthy(d: &Deployment, w: &mut World, old: &[Arc<ReplicaSet>], max: i32) -> i32 {
    let mut total = 0;
    for rs in old {
        if total >= max {
            break;
        }
        let replicas = rs_replicas(rs);
        let unhealthy = replicas - available(rs);
        if replicas == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (max - total).min(unhealthy);
        w.scale(&name(rs), replicas - down, d);
        total += down;
    }
    total
}

/// Scales old ReplicaSets down while more than `min_available` are available.
fn scale_down_available(
    d: &Deployment,
    w: &mut World,
    old: &[Arc<ReplicaSet>],
    min_available: i32,
) -> i32 {
    let available_now = util::sum(&w.sets, available);
    if available_now <= min_available {
        return 0;
    }
    let budget = available_now - min_available;
    let mut total = 0;
    for rs in old {
        if total >= budget {
            break;
        }
        let replicas = rs_replicas(rs);
        if replicas == 0 {
            continue;
        }
        let down = replicas.min(budget - total);
        w.scale(&name(rs), replicas - down, d);
        total += down;
    }
    total
}

/// Recreate's first step: every old ReplicaSet to zero; whether any was scaled.
pub fn scale_old_to_zero(d: &Deployment, w: &mut World, new: Option<&str>) -> bool {
    let mut scaled = false;
    for rs in olds(w, new) {
        if rs_replicas(&rs) != 0 {
            scaled |= w.scale(&name(&rs), 0, d);
        }
    }
    scaled
}

/// Whether the replica count changed under active ReplicaSets (their annotation says
/// another number): then only scaling happens, proportionally.
pub fn is_scaling_event(d: &Deployment, w: &World) -> bool {
    let want = replicas(d).to_string();
    w.sets
        .iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .any(|rs| util::annotation(rs, DESIRED_REPLICAS).is_some_and(|v| v != want))
}

/// Scales for a changed replica count (`scale`): the one active (or newest) ReplicaSet to
/// the replicas; the old ones to zero once the new one is saturated; else the difference
/// spread over the active ones in proportion to their sizes (`proportion.rs`).
pub fn scale(d: &Deployment, w: &mut World, new: Option<&str>) {
    let mut active: Vec<_> = w
        .sets
        .iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .cloned()
        .collect();
    util::by_age(&mut active);
    active.reverse();
    let target = match active.len() {
        0 => new
            .map(str::to_string)
            .or_else(|| olds(w, None).last().map(|rs| name(rs))),
        1 => Some(name(&active[0])),
        _ => None,
    };
    if let Some(t) = target {
        w.scale(&t, replicas(d), d);
        return;
    }
    let saturated = new
        .and_then(|n| w.get(n))
        .is_some_and(|rs| rs_replicas(rs) == replicas(d) && available(rs) == replicas(d));
    if saturated {
        scale_old_to_zero(d, w, new);
        return;
    }
    if util::is_recreate(d) {
        return;
    }
    let total = util::sum(&active, rs_replicas);
    let allowed = if replicas(d) > 0 {
        replicas(d) + max_surge(d)
    } else {
        0
    };
    for (n, size) in proportion::spread(d, &active, allowed - total) {
        w.scale(&n, size, d);
    }
}

#[cfg(test)]
#[path = "rolling_tests.rs"]
mod tests;
