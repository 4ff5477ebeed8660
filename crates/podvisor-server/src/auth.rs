//! Who may ask what of the kubelet server, as the kubelet decides it: a client certificate
//! (verified against the cluster's CA) or a bearer token (a TokenReview) says who; a
//! SubjectAccessReview on the node object says whether, the subresource named by the path
//! and the verb by the method. Answers are cached briefly (the kubelet's defaults: two
//! minutes for tokens, five for allowed and thirty seconds for denied requests).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

/// An authenticated client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
}

/// What a request asks of the node object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attributes {
    pub verb: &'static str,
    /// `proxy`, `log`, `stats` or `metrics` (of `nodes`).
    pub subresource: &'static str,
}

/// The request's attributes, as the kubelet maps them: the verb from the method, the
/// subresource from the path's first segment.
pub fn attributes(method: &str, path: &str) -> Attributes {
    let verb = match method {
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "get",
    };
    let first = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let subresource = match first {
        "stats" => "stats",
        "metrics" => "metrics",
        "logs" => "log",
        _ => "proxy",
    };
    Attributes { verb, subresource }
}

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the review could not be made: {0}")]
    Unavailable(String),
}

/// Where the answers come from: the cluster's API, or the node itself standalone.
#[async_trait]
pub trait Reviewer: Send + Sync + 'static {
    /// Who a bearer token belongs to; `None` when it is not valid.
    async fn authenticate(&self, token: &str) -> Result<Option<Identity>, ReviewError>;
    /// Whether `who` may do `what` to node `node`.
    async fn authorize(
        &self,
        who: &Identity,
        node: &str,
        what: Attributes,
    ) -> Result<bool, ReviewError>;
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Unauthorized")]
    Unauthenticated,
    #[error("Forbidden (user={user}, verb={verb}, resource=nodes, subresource={subresource})")]
    Forbidden {
        user: String,
        verb: &'static str,
        subresource: &'static str,
    },
    #[error("the authorization review failed: {0}")]
    Unavailable(String),
}

impl Refusal {
    pub fn code(&self) -> u16 {
        match self {
            Refusal::Unauthenticated => 401,
            Refusal::Forbidden { .. } => 403,
            Refusal::Unavailable(_) => 503,
        }
    }
}

const TOKEN_TTL: Duration = Duration::from_secs(120);
const ALLOWED_TTL: Duration = Duration::from_secs(300);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// Entries kept at most per cache; a full cache starts over.
const CACHE_LIMIT: usize = 4096;

type Cache<K, V> = Mutex<HashMap<K, (V, Instant)>>;

/// Authentication and authorization for the node, with their caches.
pub struct Guard {
    node: String,
    reviewer: Arc<dyn Reviewer>,
    tokens: Cache<String, Option<Identity>>,
    decisions: Cache<(Identity, Attributes), bool>,
}

impl Guard {
    pub fn new(node: &str, reviewer: Arc<dyn Reviewer>) -> Guard {
        Guard {
            node: node.to_string(),
            reviewer,
            tokens: Mutex::default(),
            decisions: Mutex::default(),
        }
    }

    /// Who the client is and whether it may: its certificate's identity if it showed one,
    /// else its bearer token's.
    pub async fn check(
        &self,
        certificate: Option<Identity>,
        authorization: Option<&str>,
        what: Attributes,
    ) -> Result<Identity, Refusal> {
        let who = match certificate {
            Some(who) => who,
            None => self.bearer(authorization).await?,
        };
        let allowed = match cached(&self.decisions, &(who.clone(), what)) {
            Some(allowed) => allowed,
            None => {
                let allowed = self
                    .reviewer
                    .authorize(&who, &self.node, what)
                    .await
                    .map_err(|e| Refusal::Unavailable(e.to_string()))?;
                let ttl = if allowed { ALLOWED_TTL } else { DENIED_TTL };
                remember(&self.decisions, (who.clone(), what), allowed, ttl);
                allowed
            }
        };
        match allowed {
            true => Ok(who),
            false => Err(Refusal::Forbidden {
                user: who.user,
                verb: what.verb,
                subresource: what.subresource,
            }),
        }
    }

    async fn bearer(&self, authorization: Option<&str>) -> Result<Identity, Refusal> {
        let token = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(Refusal::Unauthenticated)?;
        let who = match cached(&self.tokens, &token.to_string()) {
            Some(who) => who,
            None => {
                let who = self
                    .reviewer
                    .authenticate(token)
                    .await
                    .map_err(|e| Refusal::Unavailable(e.to_string()))?;
                remember(&self.tokens, token.to_string(), who.clone(), TOKEN_TTL);
                who
            }
        };
        who.ok_or(Refusal::Unauthenticated)
    }
}

fn cached<K: std::hash::Hash + Eq, V: Clone>(cache: &Cache<K, V>, key: &K) -> Option<V> {
    let cache = cache.lock().ok()?;
    let (value, until) = cache.get(key)?;
    (Instant::now() < *until).then(|| value.clone())
}

fn remember<K: std::hash::Hash + Eq, V>(cache: &Cache<K, V>, key: K, value: V, ttl: Duration) {
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, (value, Instant::now() + ttl));
    }
}

/// Standalone: the node's own API token is its administrator, and only it.
pub struct NodeToken {
    token: String,
}

impl NodeToken {
    pub fn new(token: &str) -> NodeToken {
        NodeToken {
            token: token.to_string(),
        }
    }
}

/// The identity the node's token stands for.
pub fn node_admin() -> Identity {
    Identity {
        user: "podvisor-admin".into(),
        groups: vec!["system:masters".into()],
    }
}

#[async_trait]
impl Reviewer for NodeToken {
    async fn authenticate(&self, token: &str) -> Result<Option<Identity>, ReviewError> {
        let same = token.len() == self.token.len()
            && token
                .bytes()
                .zip(self.token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        Ok(same.then(node_admin))
    }

    async fn authorize(&self, who: &Identity, _: &str, _: Attributes) -> Result<bool, ReviewError> {
        Ok(who.groups.iter().any(|g| g == "system:masters"))
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
