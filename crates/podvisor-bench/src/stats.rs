//! Latency samples and their summary (what the benchmark tables print).

use std::fmt;
use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Duration> {
        self.0.iter()
    }

    pub fn summary(&self) -> Summary {
        let mut v = self.0.clone();
        v.sort();
        let pick = |q: f64| -> Duration {
            if v.is_empty() {
                return Duration::ZERO;
            }
            // Nearest-rank percentile: the smallest sample with at least q of all samples
            // at or below it. With 50 samples p99 is the maximum, as it should be.
            let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
            v[rank - 1]
        };
        let total: Duration = v.iter().sum();
        Summary {
            n: v.len(),
            min: v.first().copied().unwrap_or_default(),
            p50: pick(0.50),
            p90: pick(0.90),
            p99: pick(0.99),
            max: v.last().copied().unwrap_or_default(),
            mean: if v.is_empty() {
                Duration::ZERO
            } else {
                total / v.len() as u32
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub n: usize,
    pub min: Duration,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub mean: Duration,
}

pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

impl Summary {
    pub const HEADER: &'static str = "| what | n | p50 ms | p90 ms | p99 ms | min ms | max ms | mean ms |\n|---|---:|---:|---:|---:|---:|---:|---:|";

    /// One markdown table row, ready to paste into docs/benchmarks.md.
    pub fn row(&self, what: &str) -> String {
        format!(
            "| {what} | {} | {} | {} | {} | {} | {} | {} |",
            self.n,
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.min),
            ms(self.max),
            ms(self.mean)
        )
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={} p50={}ms p99={}ms max={}ms",
            self.n,
            ms(self.p50),
            ms(self.p99),
            ms(self.max)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s = Samples::new();
        for i in 1..=100 {
            s.push(Duration::from_millis(i));
        }
        let sum = s.summary();
        assert_eq!(sum.p50, Duration::from_millis(50));
        assert_eq!(sum.p90, Duration::from_millis(90));
        assert_eq!(sum.p99, Duration::from_millis(99));
        assert_eq!(sum.max, Duration::from_millis(100));
        assert_eq!(sum.mean, Duration::from_micros(50_500));
    }

    #[test]
    fn small_sets_take_the_maximum_for_p99() {
        let mut s = Samples::new();
        for i in [5, 1, 3] {
            s.push(Duration::from_millis(i));
        }
        let sum = s.summary();
        assert_eq!(
            (sum.min, sum.p50, sum.p99),
            (
                Duration::from_millis(1),
                Duration::from_millis(3),
                Duration::from_millis(5)
            )
        );
        assert_eq!(Samples::new().summary().p99, Duration::ZERO);
    }
}
