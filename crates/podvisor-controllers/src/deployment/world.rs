//! The ReplicaSets of one Deployment as a sync changes them: scaling, annotating and
//! creating in memory, remembering each ReplicaSet written, so that a plan is a list of
//! writes and the status is computed from the state they leave.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::util::{self, DESIRED_REPLICAS, MAX_REPLICAS};

/// One write of a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Create(ReplicaSet),
    /// Rewritten (scaled, annotated, adopted), against the resourceVersion it was read at.
    Update(ReplicaSet),
    Delete {
        name: String,
        uid: String,
    },
}

/// `Scaled up replica set web-abc from 0 to 2`, for the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaled {
    pub name: String,
    pub from: i32,
    pub to: i32,
}

impl Scaled {
    pub fn message(&self) -> String {
        let way = if self.to > self.from { "up" } else { "down" };
        format!(
            "Scaled {way} replica set {} from {} to {}",
            self.name, self.from, self.to
        )
    }
}

#[derive(Debug, Default)]
pub struct World {
    /// The Deployment's ReplicaSets, as the writes so far leave them.
    pub sets: Vec<Arc<ReplicaSet>>,
    pub writes: Vec<Write>,
    pub scaled: Vec<Scaled>,
}

fn name(rs: &ReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or_default()
}

impl World {
    pub fn new(sets: Vec<Arc<ReplicaSet>>) -> Self {
        Self {
            sets,
            ..Self::default()
        }
    }

    pub fn get(&self, rs_name: &str) -> Option<&Arc<ReplicaSet>> {
        self.sets.iter().find(|rs| name(rs) == rs_name)
    }

    /// Replaces the ReplicaSet of that name, recording an update (merged into its create
    /// or earlier update in this plan).
    pub fn put(&mut self, rs: ReplicaSet) {
        let n = name(&rs).to_string();
        let merged = self.writes.iter_mut().find_map(|w| match w {
            Write::Create(r) | Write::Update(r) if name(r) == n => Some(r),
            _ => None,
        });
        match merged {
            Some(w) => *w = rs.clone(),
            None => self.writes.push(Write::Update(rs.clone())),
        }
        match self.sets.iter_mut().find(|r| name(r) == n) {
            Some(slot) => *slot = Arc::new(rs),
            None => self.sets.push(Arc::new(rs)),
        }
    }

    pub fn create(&mut self, rs: ReplicaSet) {
        self.writes.push(Write::Create(rs.clone()));
        self.sets.push(Arc::new(rs));
    }

    pub fn delete(&mut self, rs: &ReplicaSet) {
        let n = name(rs).to_string();
        self.writes.push(Write::Delete {
            name: n.clone(),
            uid: rs.metadata.uid.clone().unwrap_or_default(),
        });
        self.sets.retain(|r| name(r) != n);
    }

    /// Scales `rs_name` to `to` and sets the rollout's annotations on it (what replicas the
    /// Deployment wanted, and with surge); whether anything changed.
    pub fn scale(&mut self, rs_name: &str, to: i32, d: &Deployment) -> bool {
        let Some(rs) = self.get(rs_name) else {
            return false;
        };
        let from = util::rs_replicas(rs);
        let mut next = (**rs).clone();
        next.spec.replicas = Some(to);
        let annotations = next
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        let desired = util::replicas(d).to_string();
        let max = (util::replicas(d) + util::max_surge(d)).to_string();
        let annotated = annotations.get(DESIRED_REPLICAS) == Some(&desired)
            && annotations.get(MAX_REPLICAS) == Some(&max);
        if from == to && annotated {
            return false;
        }
        annotations.insert(DESIRED_REPLICAS.into(), desired);
        annotations.insert(MAX_REPLICAS.into(), max);
        self.put(next);
        if from != to {
            self.scaled.push(Scaled {
                name: rs_name.to_string(),
                from,
                to,
            });
        }
        true
    }
}
