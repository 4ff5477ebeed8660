//! Which events become writes, as plain data (client-go's event correlator, reduced to
//! what a node needs):
//!
//! - a repeat of an event (same object, type, reason and message) is one Event object whose
//!   `count` and `lastTimestamp` are updated, not a new object;
//! - each object has an allowance (a token bucket: 25 at once, then one per 5 minutes, as
//!   client-go's spam filter) so a pod that fails in a loop cannot flood the store;
//! - both tables are bounded: beyond `capacity` entries the oldest are forgotten (a
//!   forgotten repeat starts a new Event, which is what client-go's LRU does too).

use std::collections::HashMap;
use std::time::Duration;

use podvisor_core::{EventType, ObjectKey};

/// Per object: how many events at once, and how soon one more is allowed.
pub const BURST: f64 = 25.0;
pub(crate) const REFILL: Duration = Duration::from_secs(300);
/// Entries kept in each table.
pub(crate) const CAPACITY: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    object: ObjectKey,
    uid: String,
    type_: EventType,
    reason: String,
    message: String,
}

#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: u32,
    first_ms: u64,
    last_ms: u64,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: u64,
}

/// What to write for one occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Occurrence {
    /// The Event object's name (a repeat keeps the first one's).
    pub name: String,
    pub count: u32,
    pub first_ms: u64,
    pub last_ms: u64,
}

impl Occurrence {
    pub(crate) fn is_new(&self) -> bool {
        self.count == 1
    }
}

#[derive(Debug)]
pub(crate) struct Correlator {
    seen: HashMap<EventKey, Seen>,
    buckets: HashMap<ObjectKey, Bucket>,
    capacity: usize,
    /// Makes names unique when two events start in the same millisecond.
    serial: u64,
    pub dropped: u64,
}

impl Default for Correlator {
    fn default() -> Self {
        Self::new(CAPACITY)
    }
}

impl Correlator {
    pub fn new(capacity: usize) -> Self {
        Self {
            seen: HashMap::new(),
            buckets: HashMap::new(),
            capacity: capacity.max(1),
            serial: 0,
            dropped: 0,
        }
    }

    /// One occurrence at `now_ms`: what to write, or `None` when the object has used up
    /// its allowance (counted in `dropped`).
    pub fn observe(
        &mut self,
        object: &ObjectKey,
        type_: EventType,
        reason: &str,
        message: &str,
        now_ms: u64,
    ) -> Option<Occurrence> {
        if !self.take_token(object, now_ms) {
            self.dropped += 1;
            return None;
        }
        let key = EventKey {
            object: object.clone(),
            uid: object.uid.as_deref().unwrap_or_default().to_string(),
            type_,
            reason: reason.to_string(),
            message: message.to_string(),
        };
        let seen = match self.seen.get_mut(&key) {
            Some(s) => {
                s.count += 1;
                s.last_ms = now_ms.max(s.last_ms);
                s.clone()
            }
            None => {
                evict_oldest(&mut self.seen, self.capacity, |s| s.last_ms);
                self.serial += 1;
                let s = Seen {
                    name: format!(
                        "{}.{:x}",
                        object.name,
                        now_ms * 1_000_000 + self.serial % 1_000_000
                    ),
                    count: 1,
                    first_ms: now_ms,
                    last_ms: now_ms,
                };
                self.seen.insert(key, s.clone());
                s
            }
        };
        Some(Occurrence {
            name: seen.name,
            count: seen.count,
            first_ms: seen.first_ms,
            last_ms: seen.last_ms,
        })
    }

    fn take_token(&mut self, object: &ObjectKey, now_ms: u64) -> bool {
        if !self.buckets.contains_key(object) {
            evict_oldest(&mut self.buckets, self.capacity, |b| b.at_ms);
        }
        let b = self.buckets.entry(object.clone()).or_insert(Bucket {
            tokens: BURST,
            at_ms: now_ms,
        });
        let refill = now_ms.saturating_sub(b.at_ms) as f64 / REFILL.as_millis() as f64;
        b.tokens = (b.tokens + refill).min(BURST);
        b.at_ms = now_ms.max(b.at_ms);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }
}

/// Makes room for one more entry by forgetting the least recent.
fn evict_oldest<K: Clone + Eq + std::hash::Hash, V>(
    map: &mut HashMap<K, V>,
    capacity: usize,
    at: impl Fn(&V) -> u64,
) {
    if map.len() < capacity {
        return;
    }
    if let Some(k) = map
        .iter()
        .min_by_key(|(_, v)| at(v))
        .map(|(k, _)| k.clone())
    {
        map.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_core::Uid;

    fn pod(name: &str) -> ObjectKey {
        ObjectKey::pod("default", name).with_uid(Uid::from(format!("uid-{name}").as_str()))
    }

    #[test]
    fn a_repeat_counts_on_the_first_event() {
        let mut c = Correlator::default();
        let first = c
            .observe(&pod("a"), EventType::Warning, "BackOff", "m", 1_000)
            .unwrap();
        let again = c
            .observe(&pod("a"), EventType::Warning, "BackOff", "m", 5_000)
            .unwrap();
        assert!(first.is_new() && !again.is_new());
        assert_eq!((again.name.as_str(), again.count), (first.name.as_str(), 2));
        assert_eq!((again.first_ms, again.last_ms), (1_000, 5_000));
        let other = c
            .observe(&pod("a"), EventType::Warning, "BackOff", "other", 6_000)
            .unwrap();
        assert!(
            other.is_new() && other.name != first.name,
            "another message is another event"
        );
    }

    #[test]
    fn an_object_gets_a_burst_then_one_per_refill() {
        let mut c = Correlator::default();
        let ok = (0..40)
            .filter(|i| {
                c.observe(&pod("loud"), EventType::Normal, "R", &i.to_string(), 0)
                    .is_some()
            })
            .count();
        assert_eq!(ok, 25);
        assert_eq!(c.dropped, 15);
        assert!(
            c.observe(&pod("quiet"), EventType::Normal, "R", "m", 0)
                .is_some(),
            "per object"
        );
        let refill = REFILL.as_millis() as u64;
        assert!(
            c.observe(&pod("loud"), EventType::Normal, "R", "x", refill - 1)
                .is_none()
        );
        assert!(
            c.observe(&pod("loud"), EventType::Normal, "R", "x", refill)
                .is_some()
        );
    }

    #[test]
    fn the_tables_stay_bounded() {
        let mut c = Correlator::new(8);
        for i in 0..100u64 {
            c.observe(&pod(&format!("p{i}")), EventType::Normal, "R", "m", i)
                .unwrap();
        }
        assert_eq!(c.len(), 8);
        assert!(c.buckets.len() <= 8);
        let again = c
            .observe(&pod("p99"), EventType::Normal, "R", "m", 200)
            .unwrap();
        assert_eq!(again.count, 2, "the newest are the ones kept");
    }
}
