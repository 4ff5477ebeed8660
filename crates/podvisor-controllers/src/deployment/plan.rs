//! One sync of a Deployment, planned from the cached ReplicaSets (Kubernetes'
//! `syncDeployment`): claim ReplicaSets (adopt matching orphans, release what stopped
//! matching), find or make the new ReplicaSet (named by the template's hash, its revision
//! one above the old ones'), take one step of the strategy, prune history once complete,
//! and compute the status the result shows.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use podvisor_core::labels::selects;

use super::rolling;
use super::status::{self, Progress};
use super::util::{self, HASH_LABEL, REVISION, rs_template};
use super::world::{Scaled, World, Write};

#[derive(Debug, Default)]
pub struct Plan {
    pub writes: Vec<Write>,
    pub scaled: Vec<Scaled>,
    /// The revision annotation the Deployment itself should carry, when it differs.
    pub revision: Option<String>,
    pub status: DeploymentStatus,
    /// Sync again after this long (a progress deadline, old pods still stopping).
    pub requeue: Option<Duration>,
}

fn controller_uid(rs: &ReplicaSet) -> Option<&str> {
    let refs = rs.metadata.owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

fn rs_labels(rs: &ReplicaSet) -> std::collections::BTreeMap<String, String> {
    rs.metadata.labels.clone().unwrap_or_default()
}

fn selector(d: &Deployment) -> LabelSelector {
    d.spec.selector.clone()
}

/// The Deployment's ReplicaSets among `sets`: those it controls and still selects, and
/// orphans it selects (adopted); those it controls but no longer selects are released.
fn claim(d: &Deployment, sets: &[Arc<ReplicaSet>], w: &mut World) {
    let uid = d.metadata.uid.as_deref().unwrap_or_default();
    let sel = selector(d);
    let deleting = d.metadata.deletion_timestamp.is_some();
    for rs in sets {
        let matches = selects(&sel, &rs_labels(rs));
        match controller_uid(rs) {
            Some(owner) if owner == uid && matches => w.sets.push(rs.clone()),
            Some(owner) if owner == uid => {
                let mut released = (**rs).clone();
                if let Some(refs) = released.metadata.owner_references.as_mut() {
                    refs.retain(|r| r.uid != uid);
                }
                w.writes.push(Write::Update(released));
            }
            None if matches && !deleting && rs.metadata.deletion_timestamp.is_none() => {
                let mut adopted = (**rs).clone();
                let refs = adopted
                    .metadata
                    .owner_references
                    .get_or_insert_with(Vec::new);
                refs.push(crate::owners::controller_ref(d));
                w.put(adopted);
            }
            _ => {}
        }
    }
}

/// The ReplicaSet running the Deployment's template: the oldest with it, if several.
fn find_new(d: &Deployment, w: &World) -> Option<String> {
    let template = d.spec.template.clone();
    let mut same: Vec<_> = w
        .sets
        .iter()
        .filter(|rs| util::same_template(&rs_template(rs), &template))
        .cloned()
        .collect();
    util::by_age(&mut same);
    same.first().and_then(|rs| rs.metadata.name.clone())
}

fn max_old_revision(w: &World, new: Option<&str>) -> i64 {
    w.sets
        .iter()
        .filter(|rs| rs.metadata.name.as_deref() != new)
        .map(|rs| util::revision(rs))
        .max()
        .unwrap_or(0)
}

/// The new ReplicaSet brought up to date: the next revision (a rollback makes an old one
/// new again), the Deployment's annotations, and `minReadySeconds`.
fn sync_new(d: &Deployment, w: &mut World, new: &str) -> String {
    let next = max_old_revision(w, Some(new)) + 1;
    let Some(rs) = w.get(new) else {
        return next.to_string();
    };
    let mut rs = (**rs).clone();
    let mut annotations = rs.metadata.annotations.clone().unwrap_or_default();
    annotations.extend(util::copied_annotations(d));
    let revision = match util::revision(&rs) {
        r if r >= next => r,
        _ => next,
    };
    annotations.insert(REVISION.into(), revision.to_string());
    let min_ready = d.spec.min_ready_seconds;
    let spec = &mut rs.spec;
    let changed = rs.metadata.annotations.as_ref() != Some(&annotations)
        || spec.min_ready_seconds != min_ready;
    if changed {
        rs.metadata.annotations = Some(annotations);
        rs.spec.min_ready_seconds = min_ready;
        w.put(rs);
    }
    revision.to_string()
}

/// The ReplicaSet for the Deployment's template, named `<deployment>-<hash>`.
fn new_rs(d: &Deployment, hash: &str, revision: i64, replicas: i32) -> ReplicaSet {
    let spec = d.spec.clone();
    let mut template = spec.template.clone();
    let meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    let labels = meta.labels.get_or_insert_with(Default::default);
    labels.insert(HASH_LABEL.into(), hash.into());
    let labels = labels.clone();
    let mut selector = spec.selector.clone();
    let match_labels = selector.match_labels.get_or_insert_with(Default::default);
    match_labels.insert(HASH_LABEL.into(), hash.into());
    let mut annotations = util::copied_annotations(d);
    annotations.insert(REVISION.into(), revision.to_string());
    annotations.insert(util::DESIRED_REPLICAS.into(), util::replicas(d).to_string());
    let max = util::replicas(d) + util::max_surge(d);
    annotations.insert(util::MAX_REPLICAS.into(), max.to_string());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}-{hash}",
                d.metadata.name.as_deref().unwrap_or_default()
            )),
            namespace: d.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![crate::owners::controller_ref(d)]),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        },
        status: None,
    }
}

/// Finds the new ReplicaSet, or makes it (`create`); `None` on a name collision, which
/// bumps `collisionCount` in `progress`.
fn get_or_create_new(
    d: &Deployment,
    all: &[Arc<ReplicaSet>],
    w: &mut World,
    progress: &mut Progress,
    create: bool,
) -> Option<String> {
    if let Some(n) = find_new(d, w) {
        progress.revision = Some(sync_new(d, w, &n));
        progress.found = Some(n.clone());
        return Some(n);
    }
    if !create {
        return None;
    }
    let collisions = d.status.as_ref().and_then(|s| s.collision_count);
    let hash = util::template_hash(&d.spec.template, collisions);
    let name = format!("{}-{hash}", d.metadata.name.as_deref().unwrap_or_default());
    if all
        .iter()
        .any(|rs| rs.metadata.name.as_deref() == Some(name.as_str()))
    {
        progress.collision = true;
        return None;
    }
    let revision = max_old_revision(w, None) + 1;
    let replicas = rolling::new_rs_replicas(d, w, 0);
    w.create(new_rs(d, &hash, revision, replicas));
    if replicas > 0 {
        w.scaled.push(Scaled {
            name: name.clone(),
            from: 0,
            to: replicas,
        });
    }
    progress.revision = Some(revision.to_string());
    progress.created = Some(name.clone());
    Some(name)
}

/// Old ReplicaSets beyond `revisionHistoryLimit`, scaled to zero and settled, deleted
/// oldest revision first.
fn cleanup(d: &Deployment, w: &mut World, new: Option<&str>) {
    let limit = d.spec.revision_history_limit.unwrap_or(10);
    let limit = usize::try_from(limit).unwrap_or(0);
    // As `cleanupDeployment`: the old ones alive count against the limit; of the oldest
    // revisions beyond it, those scaled down and settled go.
    let mut alive: Vec<_> = w
        .sets
        .iter()
        .filter(|rs| rs.metadata.name.as_deref() != new)
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();
    if alive.len() <= limit {
        return;
    }
    alive.sort_by_key(|rs| (util::revision(rs), util::creation_ms(rs)));
    let extra = alive.len() - limit;
    let settled = |rs: &ReplicaSet| {
        let seen = rs.status.as_ref().and_then(|s| s.observed_generation);
        util::rs_replicas(rs) == 0
            && util::status_replicas(rs) == 0
            && seen >= rs.metadata.generation
    };
    for rs in alive[..extra].iter().filter(|rs| settled(rs)) {
        w.delete(rs);
    }
}

/// One step of the strategy; whether the rollout is complete afterwards is for the status.
fn rollout(
    d: &Deployment,
    all: &[Arc<ReplicaSet>],
    w: &mut World,
    p: &mut Progress,
    old_pods_running: bool,
) {
    if util::is_recreate(d) {
        let existing = find_new(d, w);
        // Waiting for old pods: a pod's deletion wakes the Deployment (`handlers::on_pod`).
        if rolling::scale_old_to_zero(d, w, existing.as_deref()) || old_pods_running {
            get_or_create_new(d, all, w, p, false);
            return;
        }
        if let Some(new) = get_or_create_new(d, all, w, p, true) {
            rolling::reconcile_new(d, w, &new);
        }
        return;
    }
    let Some(new) = get_or_create_new(d, all, w, p, true) else {
        return;
    };
    if !rolling::reconcile_new(d, w, &new) {
        rolling::reconcile_old(d, w, &new);
    }
}

/// Plans one sync of `d` given the ReplicaSets of its namespace, and whether pods of its
/// old ReplicaSets still run (Recreate waits for them).
pub fn plan(d: &Deployment, sets: &[Arc<ReplicaSet>], old_pods_running: bool, now_ms: i64) -> Plan {
    let mut w = World::new(Vec::new());
    claim(d, sets, &mut w);
    let mut p = Progress::default();
    let spec = d.spec.clone();
    let deleting = d.metadata.deletion_timestamp.is_some();
    if !deleting {
        if spec.paused == Some(true) || rolling::is_scaling_event(d, &w) {
            let new = get_or_create_new(d, sets, &mut w, &mut p, false);
            rolling::scale(d, &mut w, new.as_deref());
            if spec.paused == Some(true) {
                cleanup(d, &mut w, new.as_deref());
            }
        } else {
            rollout(d, sets, &mut w, &mut p, old_pods_running);
        }
    }
    let new = p.found.clone().or_else(|| p.created.clone());
    let (status, requeue) = status::compute(d, &w, new.as_deref(), &p, now_ms);
    if !deleting && spec.paused != Some(true) && status::complete(d, &status) {
        cleanup(d, &mut w, new.as_deref());
    }
    let current = d
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION));
    let revision = p.revision.clone().filter(|r| Some(r) != current);
    Plan {
        writes: w.writes,
        scaled: w.scaled,
        revision,
        status,
        requeue,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
