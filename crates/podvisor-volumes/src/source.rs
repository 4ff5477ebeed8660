//! Where the objects a pod refers to come from: the node's API (its own store standalone;
//! in a cluster the kube-apiserver, through the same typed client) and, for tokens, an
//! issuer. Reads from a remote API are cached for a while, and a cached object keeps
//! serving while the API cannot be reached: a pod restarted during an outage gets the
//! files and environment it had (the kubelet would hold it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use podvisor_client::{Api, Client, Error as ClientError, Object};
use tokio::time::Instant;

use crate::error::SourceError;
use crate::keep::Keep;

/// One service-account token as a pod's projection asks for it, bound to the pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenSpec {
    pub namespace: String,
    pub service_account: String,
    pub pod_name: String,
    pub pod_uid: String,
    pub audience: Option<String>,
    pub expiration_seconds: i64,
}

impl TokenSpec {
    /// The TokenRequest that asks for it: the pod's account, bound to the pod.
    pub fn request(&self) -> TokenRequestSpec {
        TokenRequestSpec {
            // None: the API server's own audiences, as an empty list meant before 1.37.
            audiences: self.audience.clone().map(|a| vec![a]),
            expiration_seconds: Some(self.expiration_seconds),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(self.pod_name.clone()),
                uid: Some(self.pod_uid.clone()),
            }),
            attestations: None,
        }
    }
}

/// Who issues service-account tokens (the cluster's TokenRequest API).
#[async_trait]
pub trait TokenIssuer: Send + Sync {
    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError>;
}

/// What the volumes and the environment read.
#[async_trait]
pub trait ObjectSource: Send + Sync {
    /// `None`: there is no such ConfigMap.
    async fn config_map(&self, ns: &str, name: &str)
    -> Result<Option<Arc<ConfigMap>>, SourceError>;
    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Arc<Secret>>, SourceError>;
    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError>;
    /// The Services a pod of namespace `ns` learns of from its environment: those of `ns`
    /// when `links`, and the API server's own (none, on a node without Services).
    async fn services(&self, _ns: &str, _links: bool) -> Result<Vec<Arc<Service>>, SourceError> {
        Ok(Vec::new())
    }
}

/// Who lists the cluster's Services (in a cluster, the kube-apiserver).
#[async_trait]
pub trait ServiceLister: Send + Sync {
    async fn services(&self, ns: &str, links: bool) -> Result<Vec<Arc<Service>>, SourceError>;
}

type Key = (&'static str, String, String);
type Cached = (Instant, Option<podvisor_client::AnyObject>);

/// An [`ObjectSource`] over a typed client.
pub struct Objects {
    client: Client,
    tokens: Option<Arc<dyn TokenIssuer>>,
    services: Option<Arc<dyn ServiceLister>>,
    /// How long a read answers again without asking (zero: always ask; the node's own
    /// store answers at once).
    fresh_for: Duration,
    /// How long one read may take before the cached object (if any) answers instead.
    timeout: Duration,
    cache: Mutex<HashMap<Key, Cached>>,
    /// After a read found the API away, reads do not ask again before this (each would
    /// wait out the timeout): the cache answers.
    away_until: Mutex<Option<Instant>>,
    /// Where what was read is kept for an outage that outlasts the agent's process.
    keep: Option<Keep>,
}

impl Objects {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            tokens: None,
            services: None,
            fresh_for: Duration::ZERO,
            timeout: Duration::from_secs(5),
            cache: Mutex::new(HashMap::new()),
            away_until: Mutex::new(None),
            keep: None,
        }
    }

    /// Keeps what is read in `keep`; while the API is away, what was kept answers when
    /// the memory holds nothing (after the agent's restart).
    #[must_use]
    pub fn kept_in(mut self, keep: Keep) -> Self {
        self.keep = Some(keep);
        self
    }

    /// Reads answer from the cache for `fresh_for` after the last one (a remote API).
    #[must_use]
    pub fn cached_for(mut self, fresh_for: Duration) -> Self {
        self.fresh_for = fresh_for;
        self
    }

    #[must_use]
    pub fn with_tokens(mut self, tokens: Arc<dyn TokenIssuer>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    #[must_use]
    pub fn with_services(mut self, services: Arc<dyn ServiceLister>) -> Self {
        self.services = Some(services);
        self
    }

    fn cached(&self, key: &Key) -> Option<Cached> {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    fn remember(&self, key: Key, value: Option<podvisor_client::AnyObject>) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(key, (Instant::now(), value));
    }

    async fn read<K: Object>(&self, ns: &str, name: &str) -> Result<Option<Arc<K>>, SourceError> {
        let key: Key = (K::KIND, ns.to_string(), name.to_string());
        let cached = self.cached(&key);
        let typed = |v: Option<podvisor_client::AnyObject>| v.and_then(|o| K::from_any(o).ok());
        if let Some((at, v)) = &cached
            && at.elapsed() < self.fresh_for
        {
            return Ok(typed(v.clone()));
        }
        let away = *self.away_until.lock().unwrap_or_else(|e| e.into_inner());
        let answer = match away.filter(|until| Instant::now() < *until) {
            Some(_) => Ok(Err(ClientError::Unavailable(
                "the API was away moments ago".into(),
            ))),
            None => {
                let api = Api::<K>::namespaced(self.client.clone(), ns);
                tokio::time::timeout(self.timeout, api.get_opt(name)).await
            }
        };
        let failure = match answer {
            Ok(Ok(v)) => {
                *self.away_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
                self.keep_as(ns, name, v.as_deref());
                self.remember(key, v.clone().map(K::into_any));
                return Ok(v);
            }
            Ok(Err(ClientError::Forbidden { message, .. })) => {
                // No longer the node's to read (no pod of it names the object): nor to keep.
                self.keep_as::<K>(ns, name, None);
                return Err(SourceError::Forbidden(message));
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {:?}", self.timeout),
        };
        if away.is_none_or(|until| Instant::now() >= until) {
            let pause = self.fresh_for.max(self.timeout);
            *self.away_until.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(Instant::now() + pause);
        }
        match cached {
            Some((_, v)) => {
                tracing::debug!(kind = K::KIND, ns, name, error = %failure, "the API is away; the object read before answers");
                Ok(typed(v))
            }
            None => self.kept(key, failure),
        }
    }

    fn keep_as<K: Object>(&self, ns: &str, name: &str, v: Option<&K>) {
        if let Some(keep) = &self.keep {
            keep.save(K::KIND, ns, name, v);
        }
    }

    /// What the keep holds of an object the API cannot be asked for now.
    fn kept<K: Object>(&self, key: Key, failure: String) -> Result<Option<Arc<K>>, SourceError> {
        let (ns, name) = (key.1.as_str(), key.2.as_str());
        let Some(kept) = self
            .keep
            .as_ref()
            .and_then(|k| k.load::<K>(K::KIND, ns, name))
        else {
            return Err(SourceError::Unavailable(failure));
        };
        tracing::info!(kind = K::KIND, ns, name, error = %failure, "the API is away; the object kept before answers");
        let kept = Arc::new(kept);
        self.remember(key, Some(K::into_any(kept.clone())));
        Ok(Some(kept))
    }
}

#[async_trait]
impl ObjectSource for Objects {
    async fn config_map(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<Arc<ConfigMap>>, SourceError> {
        self.read(ns, name).await
    }

    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Arc<Secret>>, SourceError> {
        self.read(ns, name).await
    }

    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError> {
        match &self.tokens {
            Some(t) => t.token(spec).await,
            None => Err(SourceError::Unsupported(
                "podvisor's own API issues no service-account tokens: a pod gets one in a cluster"
                    .into(),
            )),
        }
    }

    async fn services(&self, ns: &str, links: bool) -> Result<Vec<Arc<Service>>, SourceError> {
        match &self.services {
            Some(s) => s.services(ns, links).await,
            None => Ok(Vec::new()),
        }
    }
}

/// The source of a node that reads no API objects (tests of the runtime alone).
pub struct NoObjects;

#[async_trait]
impl ObjectSource for NoObjects {
    async fn config_map(&self, _: &str, _: &str) -> Result<Option<Arc<ConfigMap>>, SourceError> {
        Err(none())
    }

    async fn secret(&self, _: &str, _: &str) -> Result<Option<Arc<Secret>>, SourceError> {
        Err(none())
    }

    async fn token(&self, _: &TokenSpec) -> Result<String, SourceError> {
        Err(none())
    }
}

fn none() -> SourceError {
    SourceError::Unsupported("this node reads no API objects".into())
}
