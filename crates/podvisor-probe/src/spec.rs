//! One probe of one container, with the API's defaults applied (a manifest's pod is not
//! defaulted, so the numbers are read here): its kind, its action, its timing and
//! thresholds.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use serde::Serialize;

use crate::action::{Action, ActionError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ProbeKind {
    Startup,
    Readiness,
    Liveness,
}

impl ProbeKind {
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::Startup,
        ProbeKind::Readiness,
        ProbeKind::Liveness,
    ];

    /// As events and metrics spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Startup => "Startup",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Liveness => "Liveness",
        }
    }

    /// This kind's probe of container `c`, if it has one.
    pub fn of(self, c: &Container) -> Option<&Probe> {
        match self {
            ProbeKind::Startup => c.startup_probe.as_ref(),
            ProbeKind::Readiness => c.readiness_probe.as_ref(),
            ProbeKind::Liveness => c.liveness_probe.as_ref(),
        }
    }
}

impl fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether any container of the pod that probes may run on (app containers, sidecars) has
/// a probe: a pod without one needs nothing of the prober.
pub fn has_probes(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    let Some(spec) = &pod.spec else { return false };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| podvisor_core::restart::is_sidecar(c));
    spec.containers
        .iter()
        .chain(sidecars)
        .any(|c| ProbeKind::ALL.iter().any(|k| k.of(c).is_some()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    pub kind: ProbeKind,
    pub action: Action,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
    /// The probe's own `terminationGracePeriodSeconds`, for the kill a failure causes.
    pub grace_seconds: Option<i64>,
}

/// A count or a number of seconds as the API defaults it: unset or zero is `default`.
fn or_default(v: Option<i32>, default: u32) -> u32 {
    v.and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

impl ProbeSpec {
    /// Container `c`'s probe of `kind`: `None` when it has none.
    pub fn of(kind: ProbeKind, c: &Container) -> Option<Result<Self, ActionError>> {
        let p = kind.of(c)?;
        Some(Action::of_probe(c, p).map(|action| {
            ProbeSpec {
                kind,
                action,
                initial_delay: Duration::from_secs(
                    p.initial_delay_seconds
                        .unwrap_or(0)
                        .max(0)
                        .unsigned_abs()
                        .into(),
                ),
                period: Duration::from_secs(or_default(p.period_seconds, 10).into()),
                timeout: Duration::from_secs(or_default(p.timeout_seconds, 1).into()),
                success_threshold: match kind {
                    ProbeKind::Readiness => or_default(p.success_threshold, 1),
                    _ => 1,
                },
                failure_threshold: or_default(p.failure_threshold, 3),
                grace_seconds: p.termination_grace_period_seconds.filter(|g| *g > 0),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ExecAction;

    use super::*;

    #[test]
    fn unset_and_zero_numbers_take_the_apis_defaults() {
        let c = Container {
            readiness_probe: Some(Probe {
                exec: Some(ExecAction {
                    command: Some(vec!["true".into()]),
                }),
                period_seconds: Some(0),
                success_threshold: Some(2),
                initial_delay_seconds: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        let s = ProbeSpec::of(ProbeKind::Readiness, &c).unwrap().unwrap();
        assert_eq!(s.period, Duration::from_secs(10));
        assert_eq!(s.timeout, Duration::from_secs(1));
        assert_eq!(s.initial_delay, Duration::from_secs(5));
        assert_eq!((s.success_threshold, s.failure_threshold), (2, 3));
        assert!(ProbeSpec::of(ProbeKind::Liveness, &c).is_none());
    }
}
