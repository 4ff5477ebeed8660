//! `[eviction]` and `[image_gc]`: node-pressure eviction and image garbage collection with
//! the kubelet's defaults, read from podvisor's TOML or from a KubeletConfiguration's
//! fields (`evictionHard`, `evictionSoft`, `evictionSoftGracePeriod`,
//! `evictionMinimumReclaim`, `evictionPressureTransitionPeriod`,
//! `evictionMaxPodGracePeriod`, `mergeDefaultEvictionSettings`, `imageGC*ThresholdPercent`,
//! `imageMinimumGCAge`, `imageMaximumGCAge`), and shown by `/configz` under those names.

use std::collections::BTreeMap;
use std::time::Duration;

use podvisor_eviction::image_gc::Policy;
use podvisor_eviction::threshold::{DEFAULT_HARD, Settings};
use podvisor_kubelet::eviction::EvictionConfig;
use podvisor_kubelet::image_gc::ImageGcConfig;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::configz::go;
use super::duration::{duration, parse_duration};
use super::kubelet::{go_duration, refuse, typed};
use super::{AgentConfig, ConfigError};

/// `[eviction]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Eviction {
    /// `evictionHard`: signal → quantity or percentage of its capacity. The kubelet's five
    /// by default; an empty table turns hard eviction off.
    pub hard: BTreeMap<String, String>,
    /// `evictionSoft`, each with a grace period in `soft_grace_period`.
    pub soft: BTreeMap<String, String>,
    #[serde(deserialize_with = "durations")]
    pub soft_grace_period: BTreeMap<String, Duration>,
    pub minimum_reclaim: BTreeMap<String, String>,
    /// `mergeDefaultEvictionSettings`: the kubelet's hard defaults for signals `hard`
    /// leaves out.
    pub merge_defaults: bool,
    #[serde(deserialize_with = "duration")]
    pub pressure_transition_period: Duration,
    /// `evictionMaxPodGracePeriod`, seconds: a soft eviction's grace period at most.
    pub max_pod_grace_period: i64,
    /// How often the node is measured (the kubelet's is fixed at 10 s).
    #[serde(deserialize_with = "duration")]
    pub monitoring_period: Duration,
}

impl Default for Eviction {
    fn default() -> Self {
        Self {
            hard: Settings::kubelet_defaults().hard,
            soft: BTreeMap::new(),
            soft_grace_period: BTreeMap::new(),
            minimum_reclaim: BTreeMap::new(),
            merge_defaults: false,
            pressure_transition_period: Duration::from_secs(300),
            max_pod_grace_period: 0,
            monitoring_period: Duration::from_secs(10),
        }
    }
}

/// `[image_gc]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImageGc {
    pub high_threshold_percent: u8,
    pub low_threshold_percent: u8,
    #[serde(deserialize_with = "duration")]
    pub minimum_age: Duration,
    /// Zero: no maximum.
    #[serde(deserialize_with = "any_duration")]
    pub maximum_age: Duration,
    /// How often images are looked at (the kubelet's 5 minutes).
    #[serde(deserialize_with = "duration")]
    pub period: Duration,
}

impl Default for ImageGc {
    fn default() -> Self {
        let p = Policy::default();
        Self {
            high_threshold_percent: p.high_percent,
            low_threshold_percent: p.low_percent,
            minimum_age: p.min_age,
            maximum_age: p.max_age,
            period: Duration::from_secs(300),
        }
    }
}

fn durations<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Duration>, D::Error> {
    let raw = BTreeMap::<String, String>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| Ok((k, parse_duration(&v).map_err(serde::de::Error::custom)?)))
        .collect()
}

/// A duration that may be "0s" (off).
fn any_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    match s.trim_end_matches(['s', 'm', 'h']).trim_end_matches('m') {
        "0" => Ok(Duration::ZERO),
        _ => parse_duration(&s).map_err(serde::de::Error::custom),
    }
}

impl Eviction {
    pub fn settings(&self) -> Settings {
        let mut hard = self.hard.clone();
        if self.merge_defaults {
            for (k, v) in DEFAULT_HARD {
                hard.entry(k.to_string()).or_insert_with(|| v.to_string());
            }
        }
        Settings {
            hard,
            soft: self.soft.clone(),
            soft_grace: self.soft_grace_period.clone(),
            min_reclaim: self.minimum_reclaim.clone(),
        }
    }

    /// The eviction manager's configuration; `None` without thresholds.
    pub fn config(&self) -> Result<Option<EvictionConfig>, podvisor_eviction::ThresholdError> {
        let thresholds = self.settings().thresholds()?;
        Ok((!thresholds.is_empty()).then_some(EvictionConfig {
            thresholds,
            transition: self.pressure_transition_period,
            max_pod_grace: self.max_pod_grace_period,
            period: self.monitoring_period,
        }))
    }
}

impl ImageGc {
    pub fn policy(&self) -> Policy {
        Policy {
            high_percent: self.high_threshold_percent,
            low_percent: self.low_threshold_percent,
            min_age: self.minimum_age,
            max_age: self.maximum_age,
        }
    }

    pub fn config(&self) -> ImageGcConfig {
        ImageGcConfig {
            policy: self.policy(),
            period: self.period,
        }
    }
}

/// A KubeletConfiguration's eviction and image GC fields; `false` for any other field.
pub(super) fn apply(cfg: &mut AgentConfig, field: &str, v: &Value) -> Result<bool, ConfigError> {
    let (e, gc) = (&mut cfg.eviction, &mut cfg.image_gc);
    let map = |v: &Value| typed::<Option<BTreeMap<String, String>>>(field, v);
    match field {
        "evictionHard" => {
            if let Some(m) = map(v)? {
                let hard = Settings {
                    hard: m.clone(),
                    ..Settings::default()
                };
                hard.thresholds()
                    .map_err(|err| refuse(field, err.to_string()))?;
                e.hard = m;
            }
        }
        "evictionSoft" => e.soft = map(v)?.unwrap_or_default(),
        "evictionMinimumReclaim" => e.minimum_reclaim = map(v)?.unwrap_or_default(),
        "evictionSoftGracePeriod" => {
            let raw = map(v)?.unwrap_or_default();
            e.soft_grace_period = raw
                .into_iter()
                .map(|(k, d)| match go_duration(&d) {
                    Some(d) => Ok((k, d)),
                    None => Err(refuse(
                        field,
                        format!("{d:?} is not a duration like \"1m30s\""),
                    )),
                })
                .collect::<Result<_, _>>()?;
        }
        "evictionPressureTransitionPeriod" => {
            if let Some(d) = go_field(field, v)? {
                e.pressure_transition_period = d;
            }
        }
        "evictionMaxPodGracePeriod" => e.max_pod_grace_period = typed(field, v)?,
        "mergeDefaultEvictionSettings" => {
            e.merge_defaults = typed::<Option<bool>>(field, v)?.unwrap_or(false)
        }
        "imageGCHighThresholdPercent" => gc.high_threshold_percent = percent(field, v, 85)?,
        "imageGCLowThresholdPercent" => gc.low_threshold_percent = percent(field, v, 80)?,
        "imageMinimumGCAge" => gc.minimum_age = go_field(field, v)?.unwrap_or(Duration::ZERO),
        "imageMaximumGCAge" => gc.maximum_age = go_field(field, v)?.unwrap_or(Duration::ZERO),
        _ => return Ok(false),
    }
    Ok(true)
}

/// A Go duration field, `None` when unset.
fn go_field(field: &str, v: &Value) -> Result<Option<Duration>, ConfigError> {
    let Some(s) = typed::<Option<String>>(field, v)? else {
        return Ok(None);
    };
    go_duration(&s)
        .map(Some)
        .ok_or_else(|| refuse(field, format!("{s:?} is not a duration like \"2m0s\"")))
}

/// A percentage; unset (zero) is the kubelet's default.
fn percent(field: &str, v: &Value, default: u8) -> Result<u8, ConfigError> {
    match typed::<Option<i64>>(field, v)? {
        None | Some(0) => Ok(default),
        Some(n) => u8::try_from(n)
            .ok()
            .filter(|n| *n <= 100)
            .ok_or_else(|| refuse(field, format!("{n} is not a percentage"))),
    }
}

/// What `/configz` shows of them.
pub(super) fn configz(cfg: &AgentConfig) -> Vec<(&'static str, Value)> {
    let (e, gc) = (&cfg.eviction, &cfg.image_gc);
    let grace: BTreeMap<&String, Value> = e
        .soft_grace_period
        .iter()
        .map(|(k, d)| (k, go(*d)))
        .collect();
    vec![
        ("evictionHard", json!(e.hard)),
        ("evictionSoft", json!(e.soft)),
        ("evictionSoftGracePeriod", json!(grace)),
        ("evictionMinimumReclaim", json!(e.minimum_reclaim)),
        (
            "evictionPressureTransitionPeriod",
            go(e.pressure_transition_period),
        ),
        ("evictionMaxPodGracePeriod", json!(e.max_pod_grace_period)),
        ("mergeDefaultEvictionSettings", json!(e.merge_defaults)),
        (
            "imageGCHighThresholdPercent",
            json!(gc.high_threshold_percent),
        ),
        (
            "imageGCLowThresholdPercent",
            json!(gc.low_threshold_percent),
        ),
        ("imageMinimumGCAge", go(gc.minimum_age)),
        ("imageMaximumGCAge", go(gc.maximum_age)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubelet_configurations_eviction_fields_become_thresholds_and_policy() {
        let cfg = super::super::from_kubelet_configuration(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
             evictionHard: {memory.available: 200Mi}\n\
             evictionSoft: {nodefs.available: 15%}\n\
             evictionSoftGracePeriod: {nodefs.available: 1m30s}\n\
             evictionPressureTransitionPeriod: 30s\n\
             evictionMaxPodGracePeriod: 20\n\
             imageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: 60\n\
             imageMinimumGCAge: 5m\n",
        )
        .unwrap();
        let e = cfg.eviction.config().unwrap().unwrap();
        assert_eq!(e.thresholds.len(), 2);
        assert_eq!(e.thresholds[1].grace, Duration::from_secs(90));
        assert_eq!(
            (e.transition, e.max_pod_grace),
            (Duration::from_secs(30), 20)
        );
        let p = cfg.image_gc.policy();
        assert_eq!(
            (p.high_percent, p.low_percent, p.min_age),
            (70, 60, Duration::from_secs(300))
        );
        let bad = super::super::from_kubelet_configuration(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
             imageGCHighThresholdPercent: 170\n",
        );
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("imageGCHighThresholdPercent")
        );
    }

    #[test]
    fn the_toml_defaults_are_the_kubelets_and_merging_fills_left_out_signals() {
        let e = Eviction::default();
        assert_eq!(e.config().unwrap().unwrap().thresholds.len(), 5);
        let only_memory = Eviction {
            hard: BTreeMap::from([("memory.available".into(), "1Gi".into())]),
            ..Eviction::default()
        };
        assert_eq!(only_memory.settings().hard.len(), 1);
        let merged = Eviction {
            merge_defaults: true,
            ..only_memory
        };
        assert_eq!(merged.settings().hard["memory.available"], "1Gi");
        assert_eq!(merged.settings().hard.len(), 5);
        let off = Eviction {
            hard: BTreeMap::new(),
            ..Eviction::default()
        };
        assert!(off.config().unwrap().is_none());
    }
}
