//! Proportional scaling (Kubernetes' `GetProportion`): when a Deployment is resized while
//! more than one of its ReplicaSets has pods (mid-rollout, or paused), the change is spread
//! over them in proportion to their sizes, measured against the size the Deployment had
//! when they were last scaled (their `max-replicas` annotation), so that resizing neither
//! hurries nor holds back the rollout.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::util::{self, MAX_REPLICAS, max_surge, replicas, rs_replicas};

/// The new size of each of `active` (ReplicaSets with pods) once `to_add` (negative to
/// remove) is spread over them: largest first, and among equals the newer first when
/// growing, the older first when shrinking; what rounding leaves goes to the first.
pub fn spread(d: &Deployment, active: &[Arc<ReplicaSet>], to_add: i32) -> Vec<(String, i32)> {
    let age = |rs: &ReplicaSet| (util::creation_ms(rs), rs.metadata.name.clone());
    let mut order = active.to_vec();
    order.sort_by(|a, b| {
        let ties = if to_add > 0 {
            age(b).cmp(&age(a))
        } else {
            age(a).cmp(&age(b))
        };
        rs_replicas(b).cmp(&rs_replicas(a)).then(ties)
    });
    let mut added = 0;
    let mut sizes: Vec<(String, i32)> = order
        .iter()
        .map(|rs| {
            let share = proportion(rs, d, to_add, added);
            added += share;
            let name = rs.metadata.name.clone().unwrap_or_default();
            (name, rs_replicas(rs) + share)
        })
        .collect();
    if let Some(first) = sizes.first_mut() {
        first.1 = (first.1 + to_add - added).max(0);
    }
    sizes
}

/// This ReplicaSet's share of `to_add`, never beyond what is left to add (or remove).
fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let left = to_add - added;
    if to_add > 0 {
        fraction(rs, d).min(left)
    } else {
        fraction(rs, d).max(left)
    }
}

/// How many replicas this ReplicaSet gains (or loses) if it keeps its part of the
/// Deployment: its size times the Deployment's new maximum over the maximum it was last
/// scaled for, rounded half away from zero.
fn fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let size = rs_replicas(rs);
    if replicas(d) == 0 {
        return -size;
    }
    let before = util::annotation(rs, MAX_REPLICAS)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or_else(|| d.status.as_ref().map_or(0, |s| s.replicas.unwrap_or(0)));
    if before <= 0 {
        return 0;
    }
    let scaled = i64::from(size) * i64::from(replicas(d) + max_surge(d));
    let b = i64::from(before);
    let rounded = (2 * scaled + b) / (2 * b);
    i32::try_from(rounded).unwrap_or(i32::MAX) - size
}

#[cfg(test)]
#[path = "proportion_tests.rs"]
mod tests;
