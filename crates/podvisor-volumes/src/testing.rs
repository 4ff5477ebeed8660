//! An [`ObjectSource`] of fixed objects, for tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};

use crate::error::SourceError;
use crate::source::{ObjectSource, TokenSpec};

pub const ALLOCATABLE: podvisor_core::fit::Allocatable = podvisor_core::fit::Allocatable {
    pods: 110,
    cpu_milli: 1000,
    memory_bytes: 1 << 30,
};

#[derive(Default)]
pub struct FakeObjects {
    pub config_maps: HashMap<(String, String), Arc<ConfigMap>>,
    pub secrets: HashMap<(String, String), Arc<Secret>>,
    /// `None`: tokens are refused.
    pub token: Option<String>,
    pub token_requests: Mutex<Vec<TokenSpec>>,
    /// Every read fails as an unreachable API would.
    pub away: bool,
    pub services: Vec<Arc<Service>>,
}

impl FakeObjects {
    fn check(&self) -> Result<(), SourceError> {
        if self.away {
            return Err(SourceError::Unavailable("away".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectSource for FakeObjects {
    async fn config_map(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<Arc<ConfigMap>>, SourceError> {
        self.check()?;
        Ok(self.config_maps.get(&(ns.into(), name.into())).cloned())
    }

    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Arc<Secret>>, SourceError> {
        self.check()?;
        Ok(self.secrets.get(&(ns.into(), name.into())).cloned())
    }

    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError> {
        self.check()?;
        self.token_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(spec.clone());
        self.token
            .clone()
            .ok_or_else(|| SourceError::Unsupported("no tokens".into()))
    }

    async fn services(&self, _: &str, _: bool) -> Result<Vec<Arc<Service>>, SourceError> {
        self.check()?;
        Ok(self.services.clone())
    }
}
