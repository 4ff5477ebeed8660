//! Named health checks. Components register a check once (the PLEG: "relisted within the
//! last three minutes"); `/healthz` and `/readyz` evaluate them on every request.

use std::sync::{Arc, RwLock};

/// Why a check fails, as `/healthz` and `/readyz` report it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckError(pub String);

impl CheckError {
    /// A component's own error, reported in its words.
    pub fn of(e: impl std::fmt::Display) -> Self {
        Self(e.to_string())
    }
}

impl From<&str> for CheckError {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

/// A check answers `Ok` or the reason it is not.
pub type Check = Arc<dyn Fn() -> Result<(), CheckError> + Send + Sync>;

#[derive(Default, Clone)]
pub struct Health {
    inner: Arc<RwLock<Checks>>,
}

#[derive(Default)]
struct Checks {
    liveness: Vec<(String, Check)>,
    readiness: Vec<(String, Check)>,
}

/// The outcome of evaluating one set of checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub failures: Vec<(String, String)>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

impl Health {
    pub fn new() -> Self {
        Self::default()
    }

    /// A check for `/healthz`: failing means podvisor should be restarted.
    pub fn liveness(&self, name: &str, check: Check) {
        self.write().liveness.push((name.to_string(), check));
    }

    /// A check for `/readyz`: failing means podvisor is not (yet) doing its job.
    pub fn readiness(&self, name: &str, check: Check) {
        self.write().readiness.push((name.to_string(), check));
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Checks> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn run(checks: &[(String, Check)]) -> Report {
        Report {
            failures: checks
                .iter()
                .filter_map(|(name, c)| c().err().map(|why| (name.clone(), why.to_string())))
                .collect(),
        }
    }

    pub fn check_liveness(&self) -> Report {
        Self::run(
            &self
                .inner
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .liveness,
        )
    }

    /// Readiness includes liveness: a process that should be restarted is not ready.
    pub fn check_readiness(&self) -> Report {
        let checks = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let mut report = Self::run(&checks.liveness);
        report
            .failures
            .extend(Self::run(&checks.readiness).failures);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn readiness_includes_liveness() {
        let h = Health::new();
        let alive = Arc::new(AtomicBool::new(true));
        let a = alive.clone();
        h.liveness(
            "pleg",
            Arc::new(move || {
                if a.load(Ordering::Relaxed) {
                    Ok(())
                } else {
                    Err("stale".into())
                }
            }),
        );
        h.readiness("synced", Arc::new(|| Err("first sync pending".into())));
        assert!(h.check_liveness().ok());
        assert_eq!(
            h.check_readiness().failures,
            [("synced".into(), "first sync pending".into())]
        );
        alive.store(false, Ordering::Relaxed);
        assert_eq!(
            h.check_liveness().failures,
            [("pleg".into(), "stale".into())]
        );
        assert_eq!(h.check_readiness().failures.len(), 2);
    }
}
