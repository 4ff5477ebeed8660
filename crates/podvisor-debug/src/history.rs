//! The last minutes, for the debug page's charts: every 5 s, per actor kind, how many
//! messages wait and how long handling took on average since the sample before, and the
//! agent's own series (the mean relist duration, the mean pod start) from cumulative
//! counts and sums it hands over. Plain data: the server samples into it, the page draws
//! from it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use podvisor_actors::registry::KindTotals;

/// How many samples are kept: 10 minutes at one every 5 s.
pub const KEEP: usize = 120;

/// A series the agent adds: its name and unit, and a reading of its cumulative count and
/// sum (a histogram's), whose mean between two samples is drawn.
pub struct Extra {
    pub name: &'static str,
    pub unit: &'static str,
    pub read: Arc<dyn Fn() -> (u64, f64) + Send + Sync>,
}

/// The agent's series, read at each sample.
#[derive(Clone, Default)]
pub struct Extras(pub Arc<Vec<Extra>>);

impl std::fmt::Debug for Extras {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Extras")
    }
}

#[derive(Clone, Copy, Default)]
struct Kind {
    queued: u64,
    handled_ns: u64,
    handled: u64,
}

struct Sample {
    at_ms: u64,
    kinds: BTreeMap<&'static str, Kind>,
    extras: Vec<(u64, f64)>,
}

/// One line of a chart: a name and a value per sample (`None` where there is none).
pub type Line = (String, Vec<Option<f64>>);

#[derive(Default)]
pub struct History {
    samples: VecDeque<Sample>,
}

impl History {
    pub fn push(
        &mut self,
        at_ms: u64,
        kinds: &BTreeMap<&'static str, KindTotals>,
        extras: &Extras,
    ) {
        let kinds = kinds
            .iter()
            .map(|(k, t)| {
                let kind = Kind {
                    queued: t.queued,
                    handled_ns: t.handle_time.sum_ns,
                    handled: t.handle_time.count(),
                };
                (*k, kind)
            })
            .collect();
        let extras = extras.0.iter().map(|e| (e.read)()).collect();
        if self.samples.len() == KEEP {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample {
            at_ms,
            kinds,
            extras,
        });
    }

    /// Seconds since each sample, oldest first (the x axis).
    pub fn ages(&self, now_ms: u64) -> Vec<f64> {
        self.samples
            .iter()
            .map(|s| now_ms.saturating_sub(s.at_ms) as f64 / 1e3)
            .collect()
    }

    /// Queued messages of the `top` kinds with the most at some point.
    pub fn queued(&self, top: usize) -> Vec<Line> {
        self.per_kind(top, |_, now| Some(now.queued as f64))
    }

    /// Mean handling time (µs) between samples, of the `top` kinds with the longest.
    pub fn handling_us(&self, top: usize) -> Vec<Line> {
        self.per_kind(top, |before, now| {
            let n = now
                .handled
                .checked_sub(before?.handled)
                .filter(|n| *n > 0)?;
            let ns = now.handled_ns.saturating_sub(before?.handled_ns);
            Some(ns as f64 / n as f64 / 1e3)
        })
    }

    fn per_kind(&self, top: usize, value: impl Fn(Option<Kind>, Kind) -> Option<f64>) -> Vec<Line> {
        let kinds: Vec<&'static str> = self
            .samples
            .back()
            .map(|s| s.kinds.keys().copied().collect())
            .unwrap_or_default();
        let mut lines: Vec<Line> = kinds
            .into_iter()
            .map(|k| {
                let mut before = None;
                let points = self
                    .samples
                    .iter()
                    .map(|s| {
                        let now = s.kinds.get(k).copied()?;
                        let v = value(before, now);
                        before = Some(now);
                        v
                    })
                    .collect();
                (k.to_string(), points)
            })
            .collect();
        let peak = |l: &Line| l.1.iter().flatten().fold(0.0f64, |a, b| a.max(*b));
        lines.sort_by(|a, b| peak(b).total_cmp(&peak(a)));
        lines.retain(|l| peak(l) > 0.0);
        lines.truncate(top);
        lines
    }

    /// The agent's `i`-th series: its mean between samples.
    pub fn extra(&self, i: usize) -> Vec<Option<f64>> {
        let mut before: Option<(u64, f64)> = None;
        self.samples
            .iter()
            .map(|s| {
                let now = *s.extras.get(i)?;
                let v = before.and_then(|(n0, s0)| {
                    let n = now.0.checked_sub(n0).filter(|n| *n > 0)?;
                    Some((now.1 - s0) / n as f64)
                });
                before = Some(now);
                v
            })
            .collect()
    }
}

/// The wall clock, in milliseconds since the epoch (what samples are stamped with).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(queued: u64) -> BTreeMap<&'static str, KindTotals> {
        BTreeMap::from([(
            "pleg",
            KindTotals {
                queued,
                ..Default::default()
            },
        )])
    }

    #[test]
    fn the_newest_samples_are_kept_and_means_come_from_deltas() {
        let mut h = History::default();
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let reader = n.clone();
        let extras = Extras(Arc::new(vec![Extra {
            name: "relist",
            unit: "ms",
            read: Arc::new(move || {
                let c = reader.load(std::sync::atomic::Ordering::Relaxed);
                (c, c as f64 * 2.0)
            }),
        }]));
        for i in 0..(KEEP as u64 + 5) {
            n.store(i * 10, std::sync::atomic::Ordering::Relaxed);
            h.push(i * 5000, &totals(i % 3), &extras);
        }
        assert_eq!(h.ages((KEEP as u64 + 4) * 5000).len(), KEEP);
        let q = h.queued(5);
        assert_eq!(q[0].0, "pleg");
        assert_eq!(q[0].1.iter().flatten().fold(0.0f64, |a, b| a.max(*b)), 2.0);
        let relist = h.extra(0);
        assert_eq!(relist[0], None, "the first sample has nothing before it");
        assert_eq!(relist[1], Some(2.0));
    }
}
