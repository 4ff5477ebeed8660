//! A rollout simulated to its end: the plan's writes applied, the ReplicaSets' pods made
//! ready one sync later, and Kubernetes' bounds checked at every step.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetStatus};
use serde_json::json;

use crate::deployment::plan::plan;
use crate::deployment::util::{self, rs_replicas};
use crate::deployment::world::Write;

fn deployment(image: &str, replicas: i32, surge: i32, unavailable: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
        "spec": {"replicas": replicas, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}}))
    .unwrap()
}

fn apply(sets: &mut Vec<Arc<ReplicaSet>>, writes: Vec<Write>, tick: i64) {
    for w in writes {
        match w {
            Write::Create(mut rs) => {
                rs.metadata.uid = Some(format!("uid-{tick}"));
                rs.metadata.creation_timestamp =
                    k8s_openapi::jiff::Timestamp::from_second(1_000 + tick)
                        .ok()
                        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time);
                rs.status = Some(ReplicaSetStatus::default());
                sets.push(Arc::new(rs));
            }
            Write::Update(rs) => {
                let slot = sets
                    .iter_mut()
                    .find(|s| s.metadata.name == rs.metadata.name)
                    .unwrap();
                let status = slot.status.clone();
                *slot = Arc::new(ReplicaSet { status, ..rs });
            }
            Write::Delete { name, .. } => {
                sets.retain(|s| s.metadata.name.as_deref() != Some(&name))
            }
        }
    }
}

/// The ReplicaSet controller, one sync later: pods removed at once, new ones available.
fn settle(sets: &mut [Arc<ReplicaSet>]) {
    for rs in sets.iter_mut() {
        let want = rs_replicas(rs);
        let before = rs.status.as_ref().map_or(0, |s| s.replicas);
        let available = if want < before { want } else { before };
        let mut next = (**rs).clone();
        next.status = Some(ReplicaSetStatus {
            replicas: want,
            ready_replicas: Some(available),
            available_replicas: Some(available),
            observed_generation: Some(1),
            ..ReplicaSetStatus::default()
        });
        *rs = Arc::new(next);
    }
}

fn roll(replicas: i32, surge: i32, unavailable: i32) -> usize {
    let mut sets = Vec::new();
    let v1 = deployment("x:1", replicas, surge, unavailable);
    for tick in 0..20 {
        let writes = plan(&v1, &sets, false, 0).writes;
        apply(&mut sets, writes, tick);
        settle(&mut sets);
    }
    let available = |s: &[Arc<ReplicaSet>]| util::sum(s, util::available);
    assert_eq!(available(&sets), replicas, "v1 up");
    let v2 = deployment("x:2", replicas, surge, unavailable);
    let floor = replicas - unavailable.max(i32::from(surge == 0 && unavailable == 0));
    for tick in 20..200 {
        let p = plan(&v2, &sets, false, 0);
        apply(&mut sets, p.writes, tick);
        let total: i32 = sets.iter().map(|rs| rs_replicas(rs)).sum();
        assert!(
            total <= replicas + surge,
            "tick {tick}: {total} pods wanted"
        );
        assert!(
            available(&sets) >= floor,
            "tick {tick}: {} available",
            available(&sets)
        );
        settle(&mut sets);
        let new_done = sets.iter().any(|rs| {
            rs.spec
                .template
                .as_ref()
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .containers[0]
                .image
                .as_deref()
                == Some("x:2")
                && util::available(rs) == replicas
        });
        let old_gone = sets
            .iter()
            .filter(|rs| util::available(rs) != replicas || rs_replicas(rs) != replicas)
            .all(|rs| rs_replicas(rs) == 0);
        if new_done && old_gone {
            return usize::try_from(tick - 20).unwrap();
        }
    }
    panic!("the rollout of {replicas} (surge {surge}, unavailable {unavailable}) never finished");
}

#[test]
fn rollouts_finish_within_their_surge_and_availability_bounds() {
    for (replicas, surge, unavailable) in [
        (4, 1, 0),
        (4, 0, 1),
        (10, 3, 2),
        (1, 1, 0),
        (3, 0, 3),
        (20, 5, 5),
    ] {
        roll(replicas, surge, unavailable);
    }
}

#[test]
fn a_wider_surge_finishes_in_fewer_steps() {
    assert!(roll(10, 5, 0) < roll(10, 1, 0));
}
