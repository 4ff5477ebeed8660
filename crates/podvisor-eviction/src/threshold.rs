//! Eviction thresholds as the kubelet reads them (`evictionHard`, `evictionSoft`,
//! `evictionSoftGracePeriod`, `evictionMinimumReclaim`): a signal, a quantity or a
//! percentage of the signal's capacity below which the threshold is met, a grace period
//! (none: hard) and the minimum to reclaim once met.

use std::collections::BTreeMap;
use std::time::Duration;

use podvisor_core::quantity;

use crate::signal::Signal;

/// The kubelet's defaults for `evictionHard` (Linux).
pub const DEFAULT_HARD: [(&str, &str); 5] = [
    ("memory.available", "100Mi"),
    ("nodefs.available", "10%"),
    ("nodefs.inodesFree", "5%"),
    ("imagefs.available", "15%"),
    ("imagefs.inodesFree", "5%"),
];

/// Signals the kubelet knows that podvisor does not measure, and why.
const UNSUPPORTED: [(&str, &str); 3] = [
    (
        "allocatableMemory.available",
        "podvisor makes no node-allocatable cgroup for pods to measure",
    ),
    (
        "containerfs.available",
        "podvisor does not split the images' and containers' filesystems (KubeletSeparateDiskGC)",
    ),
    (
        "containerfs.inodesFree",
        "podvisor does not split the images' and containers' filesystems (KubeletSeparateDiskGC)",
    ),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    #[error("eviction signal {0:?} is not supported: {1}")]
    Unsupported(String, &'static str),
    #[error("eviction signal {0:?} is unknown")]
    Unknown(String),
    #[error("eviction threshold {signal} {value:?}: {why}")]
    Invalid {
        signal: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("grace period must be specified for the soft eviction threshold {0}")]
    NoGracePeriod(&'static str),
}

/// Where a threshold lies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// Bytes, or a count (inodes, process ids).
    Quantity(i64),
    /// A fraction of the signal's capacity (0 to 1).
    Percentage(f32),
}

impl Value {
    /// The quantity the value stands for on a resource of `capacity` (the kubelet's
    /// `GetThresholdQuantity`).
    pub fn of(self, capacity: i64) -> i64 {
        match self {
            Value::Quantity(q) => q,
            Value::Percentage(p) => (capacity as f64 * f64::from(p)) as i64,
        }
    }

    /// `None` for "0%" and "100%", which the kubelet ignores.
    fn parse(signal: Signal, text: &str) -> Result<Option<Value>, ThresholdError> {
        let invalid = |why| ThresholdError::Invalid {
            signal: signal.name(),
            value: text.to_string(),
            why,
        };
        if let Some(p) = text.strip_suffix('%') {
            if text == "0%" || text == "100%" {
                return Ok(None);
            }
            let p: f32 = p.parse().map_err(|_| invalid("not a percentage"))?;
            return match p / 100.0 {
                f if f < 0.0 => Err(invalid("must be >= 0%")),
                f if f > 1.0 => Err(invalid("must be <= 100%")),
                f => Ok(Some(Value::Percentage(f))),
            };
        }
        let q = quantity::parse_units(text).map_err(|_| invalid("not a quantity"))?;
        match q > 0 {
            true => Ok(Some(Value::Quantity(q))),
            false => Err(invalid("must be positive")),
        }
    }
}

/// One threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub signal: Signal,
    pub value: Value,
    /// How long it must be met before it drives evictions; zero for a hard threshold.
    pub grace: Duration,
    pub min_reclaim: Option<Value>,
}

impl Threshold {
    pub fn is_hard(&self) -> bool {
        self.grace.is_zero()
    }
}

/// The thresholds' settings, by signal name, as a KubeletConfiguration has them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub hard: BTreeMap<String, String>,
    pub soft: BTreeMap<String, String>,
    pub soft_grace: BTreeMap<String, Duration>,
    pub min_reclaim: BTreeMap<String, String>,
}

impl Settings {
    /// The kubelet's defaults: its hard thresholds, nothing soft.
    pub fn kubelet_defaults() -> Self {
        Settings {
            hard: DEFAULT_HARD
                .iter()
                .map(|(s, v)| (s.to_string(), v.to_string()))
                .collect(),
            ..Settings::default()
        }
    }

    /// The thresholds, checked as the kubelet's `ParseThresholdConfig` checks them.
    pub fn thresholds(&self) -> Result<Vec<Threshold>, ThresholdError> {
        let mut out = statements(&self.hard, |_| Ok(Duration::ZERO))?;
        out.extend(statements(&self.soft, |s| {
            let grace = self.soft_grace.get(s.name()).copied();
            grace.ok_or(ThresholdError::NoGracePeriod(s.name()))
        })?);
        for name in self.soft_grace.keys() {
            signal(name)?;
        }
        for (name, text) in &self.min_reclaim {
            let s = signal(name)?;
            let v = min_reclaim(s, text)?;
            for t in out.iter_mut().filter(|t| t.signal == s) {
                t.min_reclaim = v;
            }
        }
        Ok(out)
    }
}

fn signal(name: &str) -> Result<Signal, ThresholdError> {
    if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == name) {
        return Err(ThresholdError::Unsupported(name.to_string(), why));
    }
    Signal::parse(name).ok_or_else(|| ThresholdError::Unknown(name.to_string()))
}

fn statements(
    map: &BTreeMap<String, String>,
    grace: impl Fn(Signal) -> Result<Duration, ThresholdError>,
) -> Result<Vec<Threshold>, ThresholdError> {
    let mut out = Vec::new();
    for (name, text) in map {
        let s = signal(name)?;
        if let Some(value) = Value::parse(s, text)? {
            out.push(Threshold {
                signal: s,
                value,
                grace: grace(s)?,
                min_reclaim: None,
            });
        }
    }
    Ok(out)
}

/// A minimum reclaim: a percentage or a quantity, zero allowed.
fn min_reclaim(s: Signal, text: &str) -> Result<Option<Value>, ThresholdError> {
    let invalid = |why| ThresholdError::Invalid {
        signal: s.name(),
        value: text.to_string(),
        why,
    };
    if let Some(p) = text.strip_suffix('%') {
        let p: f32 = p.parse().map_err(|_| invalid("not a percentage"))?;
        return match (0.0..=100.0).contains(&p) {
            true => Ok(Some(Value::Percentage(p / 100.0))),
            false => Err(invalid("must be between 0% and 100%")),
        };
    }
    match quantity::parse_units(text) {
        Ok(q) if q >= 0 => Ok(Some(Value::Quantity(q))),
        _ => Err(invalid("must be a quantity of zero or more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_kubelets_defaults_read_as_five_hard_thresholds() {
        let t = Settings::kubelet_defaults().thresholds().unwrap();
        assert_eq!(t.len(), 5);
        let mem = t
            .iter()
            .find(|t| t.signal == Signal::MemoryAvailable)
            .unwrap();
        assert_eq!(mem.value, Value::Quantity(100 << 20));
        assert!(mem.is_hard());
        let nodefs = t
            .iter()
            .find(|t| t.signal == Signal::NodeFsAvailable)
            .unwrap();
        assert_eq!(nodefs.value.of(1000), 100);
    }

    #[test]
    fn soft_thresholds_need_a_grace_period_and_zero_disables() {
        let mut s = Settings {
            soft: map(&[("memory.available", "1Gi")]),
            ..Settings::default()
        };
        assert_eq!(
            s.thresholds(),
            Err(ThresholdError::NoGracePeriod("memory.available"))
        );
        s.soft_grace
            .insert("memory.available".into(), Duration::from_secs(90));
        s.hard = map(&[("nodefs.available", "0%"), ("pid.available", "1k")]);
        s.min_reclaim = map(&[("memory.available", "500Mi")]);
        let t = s.thresholds().unwrap();
        assert_eq!(t.len(), 2, "0% is off: {t:?}");
        assert_eq!(t[0].value, Value::Quantity(1000));
        assert_eq!(t[1].grace, Duration::from_secs(90));
        assert_eq!(t[1].min_reclaim, Some(Value::Quantity(500 << 20)));
    }

    #[test]
    fn what_podvisor_cannot_measure_or_read_is_refused_by_name() {
        let bad = |k: &str, v: &str| {
            Settings {
                hard: map(&[(k, v)]),
                ..Settings::default()
            }
            .thresholds()
            .unwrap_err()
            .to_string()
        };
        assert!(bad("allocatableMemory.available", "1Gi").contains("node-allocatable"));
        assert!(bad("memory.free", "1Gi").contains("unknown"));
        assert!(bad("nodefs.available", "120%").contains("<= 100%"));
        assert!(bad("memory.available", "0").contains("positive"));
        assert!(bad("memory.available", "lots").contains("not a quantity"));
    }
}
