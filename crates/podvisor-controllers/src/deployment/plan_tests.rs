use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use serde_json::{Value, json};

use super::*;
use crate::deployment::util::{self, DESIRED_REPLICAS, HASH_LABEL, REVISION, template_hash};

const NOW: i64 = 1_700_000_000_000;

fn deployment(image: &str, replicas: i32, strategy: Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
        "spec": {"replicas": replicas, "strategy": strategy, "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}},
        "status": {"observedGeneration": 1}}))
    .unwrap()
}

fn rolling(surge: Value, unavailable: Value) -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
}

/// A ReplicaSet of `d`'s controlling made for `image`, at `replicas`, all available.
fn rs_for(d: &Deployment, image: &str, revision: i64, replicas: i32, age: i64) -> Arc<ReplicaSet> {
    let mut t = d.spec.template.clone();
    t.spec.as_mut().unwrap().containers[0].image = Some(image.into());
    let hash = template_hash(&t, None);
    t.metadata
        .as_mut()
        .unwrap()
        .labels
        .as_mut()
        .unwrap()
        .insert(HASH_LABEL.into(), hash.clone());
    let created = k8s_openapi::jiff::Timestamp::from_millisecond(NOW - age * 1000).unwrap();
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": format!("web-{hash}"), "namespace": "default", "uid": format!("rs-{image}"),
            "generation": 1, "resourceVersion": "7",
            "creationTimestamp": created.to_string(),
            "labels": {"app": "web", HASH_LABEL: hash},
            "annotations": {REVISION: revision.to_string(), DESIRED_REPLICAS: util::replicas(d).to_string()},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "d-uid", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", HASH_LABEL: hash}},
            "template": t},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
            "observedGeneration": 1}}))
    .unwrap();
    Arc::new(rs)
}

fn created(p: &Plan) -> Vec<&ReplicaSet> {
    p.writes
        .iter()
        .filter_map(|w| match w {
            Write::Create(rs) => Some(rs),
            _ => None,
        })
        .collect()
}

fn scaled_to(p: &Plan, name: &str) -> Option<i32> {
    p.writes.iter().find_map(|w| match w {
        Write::Update(rs) | Write::Create(rs) if rs.metadata.name.as_deref() == Some(name) => {
            util::rs_replicas(rs).into()
        }
        _ => None,
    })
}

#[test]
fn a_new_deployment_gets_its_replica_set_named_by_the_template_hash() {
    let d = deployment("x:1", 3, rolling(json!("25%"), json!("25%")));
    let p = plan(&d, &[], false, NOW);
    let new = created(&p);
    assert_eq!(new.len(), 1);
    let rs = new[0];
    let hash = template_hash(&d.spec.template, None);
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    let spec = &rs.spec;
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(
        spec.selector.match_labels.as_ref().unwrap()[HASH_LABEL],
        hash
    );
    assert_eq!(util::revision(rs), 1);
    assert_eq!(
        rs.metadata.owner_references.as_ref().unwrap()[0].uid,
        "d-uid"
    );
    assert_eq!(p.revision.as_deref(), Some("1"));
    let progressing = p
        .status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert_eq!(progressing.reason.as_deref(), Some("NewReplicaSetCreated"));
    assert_eq!(
        p.scaled[0].message(),
        format!("Scaled up replica set web-{hash} from 0 to 3")
    );
}

#[test]
fn a_rollback_makes_the_old_replica_set_new_again_with_the_next_revision() {
    let d = deployment("x:1", 2, rolling(json!(1), json!(0)));
    let old = rs_for(&d, "x:1", 1, 0, 100);
    let current = rs_for(&d, "x:2", 2, 2, 50);
    let p = plan(&d, &[old.clone(), current], false, NOW);
    assert!(created(&p).is_empty(), "{:?}", p.writes);
    let name = old.metadata.name.clone().unwrap();
    let updated = p.writes.iter().find_map(|w| match w {
        Write::Update(rs) if rs.metadata.name.as_ref() == Some(&name) => Some(rs),
        _ => None,
    });
    assert_eq!(util::revision(updated.unwrap()), 3);
    assert_eq!(p.revision.as_deref(), Some("3"));
    assert_eq!(scaled_to(&p, &name), Some(1), "one surge replica first");
}

#[test]
fn recreate_scales_the_old_down_then_waits_for_its_pods_before_creating() {
    let d = deployment("x:2", 3, json!({"type": "Recreate"}));
    let old = rs_for(&d, "x:1", 1, 3, 100);
    let p = plan(&d, std::slice::from_ref(&old), true, NOW);
    assert_eq!(
        scaled_to(&p, old.metadata.name.as_deref().unwrap()),
        Some(0)
    );
    assert!(created(&p).is_empty());
    let mut stopped = (*old).clone();
    stopped.spec.replicas = Some(0);
    stopped.status = Some(Default::default());
    let stopped = Arc::new(stopped);
    let p = plan(&d, std::slice::from_ref(&stopped), true, NOW);
    assert!(created(&p).is_empty(), "old pods still run");
    let p = plan(&d, &[stopped], false, NOW);
    assert_eq!(util::rs_replicas(created(&p)[0]), 3);
}

#[test]
fn a_paused_deployment_rolls_nothing_out() {
    let mut d = deployment("x:2", 2, rolling(json!(1), json!(0)));
    d.spec.paused = Some(true);
    let old = rs_for(&d, "x:1", 1, 2, 100);
    let p = plan(&d, std::slice::from_ref(&old), false, NOW);
    assert!(created(&p).is_empty(), "{:?}", p.writes);
    assert!(p.scaled.is_empty(), "{:?}", p.scaled);
    let progressing = p
        .status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert_eq!(progressing.reason.as_deref(), Some("DeploymentPaused"));
}

#[test]
fn history_beyond_the_limit_goes_oldest_revision_first_once_complete() {
    let mut d = deployment("x:4", 1, rolling(json!(1), json!(0)));
    d.spec.revision_history_limit = Some(1);
    let sets = vec![
        rs_for(&d, "x:1", 1, 0, 400),
        rs_for(&d, "x:2", 2, 0, 300),
        rs_for(&d, "x:3", 3, 0, 200),
        rs_for(&d, "x:4", 4, 1, 100),
    ];
    let p = plan(&d, &sets, false, NOW);
    let deleted: Vec<_> = p
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Delete { uid, .. } => Some(uid.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["rs-x:1", "rs-x:2"]);
}

#[test]
fn a_name_taken_by_another_template_counts_a_collision() {
    let d = deployment("x:1", 1, rolling(json!(1), json!(0)));
    let mut squatter = (*rs_for(&d, "x:9", 1, 1, 100)).clone();
    let hash = template_hash(&d.spec.template, None);
    squatter.metadata.name = Some(format!("web-{hash}"));
    squatter.metadata.owner_references = None;
    squatter.metadata.labels = Some([("other".to_string(), "x".to_string())].into());
    let p = plan(&d, &[Arc::new(squatter)], false, NOW);
    assert!(created(&p).is_empty());
    assert_eq!(p.status.collision_count, Some(1));
}

#[test]
fn an_orphan_that_matches_is_adopted_and_one_that_stopped_matching_released() {
    let d = deployment("x:1", 1, rolling(json!(1), json!(0)));
    let mut orphan = (*rs_for(&d, "x:1", 1, 1, 100)).clone();
    orphan.metadata.owner_references = None;
    let mut strayed = (*rs_for(&d, "x:0", 0, 0, 200)).clone();
    strayed.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    let p = plan(&d, &[Arc::new(orphan), Arc::new(strayed)], false, NOW);
    let owners: Vec<_> = p
        .writes
        .iter()
        .filter_map(|w| match w {
            Write::Update(rs) => Some((
                rs.metadata.uid.clone().unwrap(),
                rs.metadata
                    .owner_references
                    .clone()
                    .unwrap_or_default()
                    .len(),
            )),
            _ => None,
        })
        .collect();
    assert!(owners.contains(&("rs-x:1".to_string(), 1)), "{owners:?}");
    assert!(owners.contains(&("rs-x:0".to_string(), 0)), "{owners:?}");
}

#[test]
fn no_progress_past_the_deadline_times_out() {
    let d0 = deployment("x:2", 2, rolling(json!(1), json!(0)));
    let old = rs_for(&d0, "x:1", 1, 2, 1000);
    let first = plan(&d0, std::slice::from_ref(&old), false, NOW);
    let mut d = d0.clone();
    d.status = Some(first.status.clone());
    let new = created(&first)[0].clone();
    let mut stuck = new.clone();
    stuck.metadata.creation_timestamp =
        Some(podvisor_core::time::from_nanos(NOW * 1_000_000).unwrap());
    stuck.status = Some(Default::default());
    let later = NOW + 601_000;
    let p = plan(&d, &[old, Arc::new(stuck)], false, later);
    let progressing = p
        .status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert_eq!(
        (progressing.status.as_deref(), progressing.reason.as_deref()),
        (Some("False"), Some("ProgressDeadlineExceeded"))
    );
}
