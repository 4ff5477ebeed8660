//! Which images to remove, as the kubelet's image garbage collector picks them: it tracks
//! when each image was first seen and last used by a container; above the high threshold
//! of the images' filesystem it frees down to the low one, least recently used first,
//! never an image in use, a pinned one (the sandbox image) or one seen for less than the
//! minimum age; an image unused for longer than the maximum age goes whatever the disk.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

/// `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`,
/// `imageMaximumGCAge` (zero: no maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub high_percent: u8,
    pub low_percent: u8,
    pub min_age: Duration,
    pub max_age: Duration,
}

impl Default for Policy {
    /// The kubelet's.
    fn default() -> Self {
        Policy {
            high_percent: 85,
            low_percent: 80,
            min_age: Duration::from_secs(120),
            max_age: Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "imageGCLowThresholdPercent ({low}) must be below imageGCHighThresholdPercent ({high}), both at most 100"
)]
pub struct PolicyError {
    pub high: u8,
    pub low: u8,
}

impl Policy {
    pub fn check(&self) -> Result<(), PolicyError> {
        match self.high_percent <= 100 && self.low_percent < self.high_percent {
            true => Ok(()),
            false => Err(PolicyError {
                high: self.high_percent,
                low: self.low_percent,
            }),
        }
    }

    /// Bytes to free to come down to the low threshold, when usage is at or above the
    /// high one (the kubelet's `GarbageCollect`).
    pub fn to_free(&self, capacity: u64, available: u64) -> Option<u64> {
        if capacity == 0 || self.high_percent >= 100 {
            return None;
        }
        let used_percent = 100 - (available.min(capacity) * 100 / capacity);
        if used_percent < u64::from(self.high_percent) {
            return None;
        }
        let target_free = capacity * u64::from(100 - self.low_percent) / 100;
        Some(target_free.saturating_sub(available))
    }
}

/// An image the runtime lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub size: u64,
    pub pinned: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Record {
    #[serde(skip)]
    first_seen: Instant,
    #[serde(skip)]
    last_used: Instant,
    size: u64,
    pinned: bool,
}

/// What the collector knows of the runtime's images (rebuilt on a restart: every image
/// is then first seen at that moment, so none goes before the minimum age).
#[derive(Debug, Default)]
pub struct Images {
    records: BTreeMap<String, Record>,
}

impl Images {
    /// Takes a new listing: images used by a container (any state) are used now.
    pub fn detect(&mut self, listed: &[Listed], in_use: &HashSet<String>, now: Instant) {
        let ids: HashSet<&str> = listed.iter().map(|l| l.id.as_str()).collect();
        self.records.retain(|id, _| ids.contains(id.as_str()));
        for l in listed {
            let r = self.records.entry(l.id.clone()).or_insert(Record {
                first_seen: now,
                last_used: now,
                size: l.size,
                pinned: l.pinned,
            });
            (r.size, r.pinned) = (l.size, l.pinned);
            if in_use.contains(&l.id) {
                r.last_used = now;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Images that may go, least recently used first: `(id, size)`.
    fn removable(
        &self,
        in_use: &HashSet<String>,
        now: Instant,
        min_age: Duration,
    ) -> Vec<(&str, &Record)> {
        let mut out: Vec<(&str, &Record)> = self
            .records
            .iter()
            .filter(|(id, r)| !in_use.contains(*id) && !r.pinned)
            .filter(|(_, r)| now.saturating_duration_since(r.first_seen) >= min_age)
            .map(|(id, r)| (id.as_str(), r))
            .collect();
        out.sort_by_key(|(_, r)| (r.last_used, r.first_seen));
        out
    }

    /// The images to remove to free `bytes`, in order (all that may go when they free
    /// less).
    pub fn to_free(
        &self,
        bytes: u64,
        in_use: &HashSet<String>,
        now: Instant,
        min_age: Duration,
    ) -> Vec<(String, u64)> {
        let mut freed = 0u64;
        let mut out = Vec::new();
        for (id, r) in self.removable(in_use, now, min_age) {
            if freed >= bytes {
                break;
            }
            freed = freed.saturating_add(r.size);
            out.push((id.to_string(), r.size));
        }
        out
    }

    /// The images unused for longer than `max_age` (none when it is zero).
    pub fn too_old(
        &self,
        in_use: &HashSet<String>,
        now: Instant,
        policy: &Policy,
    ) -> Vec<(String, u64)> {
        if policy.max_age.is_zero() {
            return Vec::new();
        }
        self.removable(in_use, now, policy.min_age)
            .into_iter()
            .filter(|(_, r)| now.saturating_duration_since(r.last_used) > policy.max_age)
            .map(|(id, r)| (id.to_string(), r.size))
            .collect()
    }

    pub fn forget(&mut self, id: &str) {
        self.records.remove(id);
    }
}

#[cfg(test)]
#[path = "image_gc_tests.rs"]
mod tests;
