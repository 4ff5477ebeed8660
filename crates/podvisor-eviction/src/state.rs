//! What one pass of the eviction manager decides from the thresholds and the node's
//! observations (the kubelet's `synchronize`, before it ranks pods): which thresholds are
//! met, counting a met threshold's minimum reclaim until it is reclaimed; which have been
//! met for their grace period; and which node conditions hold, each kept for the pressure
//! transition period after it was last observed, so a node does not flap.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::signal::{Pressure, Signal};
use crate::threshold::Threshold;

/// A signal's measurement: what is available of what capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Observation {
    pub available: i64,
    pub capacity: i64,
}

pub type Observations = BTreeMap<Signal, Observation>;

/// Which thresholds (by their index) are met, the minimum reclaim counted or not.
pub fn met(
    thresholds: &[Threshold],
    which: impl Iterator<Item = usize>,
    obs: &Observations,
    with_min_reclaim: bool,
) -> BTreeSet<usize> {
    which
        .filter(|&i| {
            let t = &thresholds[i];
            let Some(o) = obs.get(&t.signal) else {
                return false;
            };
            let mut quantity = t.value.of(o.capacity);
            if with_min_reclaim && let Some(m) = t.min_reclaim {
                quantity = quantity.saturating_add(m.of(o.capacity));
            }
            quantity > o.available
        })
        .collect()
}

/// The outcome of one pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pass {
    /// The node conditions to report.
    pub conditions: BTreeSet<Pressure>,
    /// The thresholds whose grace period has passed, memory's first: what to reclaim for.
    pub act_on: Vec<usize>,
}

/// The manager's memory between passes (rebuilt empty on a restart: a threshold still met
/// is met again at the next pass, its grace period counted from then).
#[derive(Debug)]
pub struct Manager {
    thresholds: Vec<Threshold>,
    transition: Duration,
    /// Met and past their grace period at the last pass.
    met: BTreeSet<usize>,
    first_observed: BTreeMap<usize, Instant>,
    last_observed: BTreeMap<Pressure, Instant>,
    conditions: BTreeSet<Pressure>,
}

impl Manager {
    pub fn new(thresholds: Vec<Threshold>, transition: Duration) -> Self {
        Manager {
            thresholds,
            transition,
            met: BTreeSet::new(),
            first_observed: BTreeMap::new(),
            last_observed: BTreeMap::new(),
            conditions: BTreeSet::new(),
        }
    }

    pub fn thresholds(&self) -> &[Threshold] {
        &self.thresholds
    }

    /// The conditions the last pass reported.
    pub fn conditions(&self) -> &BTreeSet<Pressure> {
        &self.conditions
    }

    /// One pass over new observations.
    pub fn pass(&mut self, obs: &Observations, now: Instant) -> Pass {
        let all = 0..self.thresholds.len();
        let mut met = met(&self.thresholds, all, obs, false);
        met.extend(met_still(&self.thresholds, &self.met, obs));
        self.first_observed = met
            .iter()
            .map(|&i| (i, self.first_observed.get(&i).copied().unwrap_or(now)))
            .collect();
        for &i in &met {
            self.last_observed
                .insert(self.thresholds[i].signal.pressure(), now);
        }
        // Observed in this pass, or within the transition period (the kubelet drops even
        // a condition observed now when the period is zero; podvisor reports it).
        self.last_observed
            .retain(|_, at| *at == now || now.saturating_duration_since(*at) < self.transition);
        self.conditions = self.last_observed.keys().copied().collect();
        self.met = met
            .into_iter()
            .filter(|i| {
                now.saturating_duration_since(self.first_observed[i]) >= self.thresholds[*i].grace
            })
            .collect();
        let mut act_on: Vec<usize> = self.met.iter().copied().collect();
        act_on.sort_by_key(|&i| self.thresholds[i].signal != Signal::MemoryAvailable);
        Pass {
            conditions: self.conditions.clone(),
            act_on,
        }
    }

    /// Whether new observations (after reclaiming node-level resources) meet no threshold,
    /// minimum reclaims counted: then no pod needs to go.
    pub fn relieved(&self, obs: &Observations) -> bool {
        met(&self.thresholds, 0..self.thresholds.len(), obs, true).is_empty()
    }
}

/// Of the thresholds met before, those still short of their minimum reclaim.
fn met_still(
    thresholds: &[Threshold],
    before: &BTreeSet<usize>,
    obs: &Observations,
) -> BTreeSet<usize> {
    met(thresholds, before.iter().copied(), obs, true)
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
