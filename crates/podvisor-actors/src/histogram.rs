//! A fixed-bucket latency histogram that many threads can record into without locks. The
//! buckets follow a 1-2-5 series from 1 µs to 10 s: wide enough for a handler that takes
//! a microsecond and one that blocks for seconds, small enough (23 counters) to keep one
//! per actor.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use serde::Serialize;

/// Upper bounds of the buckets in nanoseconds; a last, unbounded bucket follows.
pub const BOUNDS_NS: [u64; 22] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];
const BUCKETS: usize = BOUNDS_NS.len() + 1;

#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Histogram {
    pub fn record(&self, d: Duration) {
        let ns = d.as_nanos().min(u64::MAX as u128) as u64;
        let idx = BOUNDS_NS.partition_point(|&b| b < ns);
        self.counts[idx].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(ns, Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: std::array::from_fn(|i| self.counts[i].load(Relaxed)),
            sum_ns: self.sum_ns.load(Relaxed),
        }
    }
}

/// A point-in-time copy; snapshots of one kind of actor add up for per-kind metrics, and
/// two of one histogram differ by what was recorded between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct HistogramSnapshot {
    pub counts: [u64; BUCKETS],
    pub sum_ns: u64,
}

/// What the debug endpoint shows of a histogram: count, mean and estimated quantiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// What was recorded since `earlier` (a snapshot of the same histogram).
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: std::array::from_fn(|i| self.counts[i].saturating_sub(earlier.counts[i])),
            sum_ns: self.sum_ns.saturating_sub(earlier.sum_ns),
        }
    }

    pub fn add(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.sum_ns += other.sum_ns;
    }

    /// The upper bound of the bucket holding quantile `q` (an over-estimate by at most one
    /// bucket width); for the unbounded last bucket, the largest finite bound.
    pub fn quantile(&self, q: f64) -> Duration {
        let total = self.count();
        if total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let bound = BOUNDS_NS
                    .get(i)
                    .copied()
                    .unwrap_or(BOUNDS_NS[BOUNDS_NS.len() - 1]);
                return Duration::from_nanos(bound);
            }
        }
        Duration::from_nanos(BOUNDS_NS[BOUNDS_NS.len() - 1])
    }

    pub fn summary(&self) -> LatencySummary {
        let count = self.count();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        LatencySummary {
            count,
            mean_us: if count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / count as f64 / 1e3
            },
            p50_us: us(self.quantile(0.5)),
            p99_us: us(self.quantile(0.99)),
        }
    }

    /// Prometheus-style cumulative buckets: `(upper bound in seconds, count ≤ bound)`, the
    /// last with an infinite bound.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        self.counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                acc += c;
                let le = BOUNDS_NS.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e9);
                (le, acc)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_into_the_right_bucket_and_estimates_quantiles() {
        let h = Histogram::default();
        for _ in 0..98 {
            h.record(Duration::from_micros(3)); // bucket ≤ 5 µs
        }
        h.record(Duration::from_millis(30)); // ≤ 50 ms
        h.record(Duration::from_secs(60)); // unbounded
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        assert_eq!(s.quantile(0.5), Duration::from_micros(5));
        assert_eq!(s.quantile(0.99), Duration::from_millis(50));
        assert_eq!(s.quantile(1.0), Duration::from_secs(10));
        let cum = s.cumulative();
        assert_eq!(cum.last().unwrap(), &(f64::INFINITY, 100));
        assert_eq!(cum[2], (5e-6, 98));
    }

    #[test]
    fn boundaries_are_inclusive_upper_bounds() {
        let h = Histogram::default();
        h.record(Duration::from_micros(1));
        h.record(Duration::from_nanos(1_001));
        let s = h.snapshot();
        assert_eq!((s.counts[0], s.counts[1]), (1, 1));
        assert_eq!(HistogramSnapshot::default().summary().p99_us, 0.0);
    }
}
