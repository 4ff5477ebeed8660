//! Projected service-account tokens on a node standing alone: the kubelet's token manager
//! (a [`TokenCache`]) over the node's own signer, bound to the pod as a TokenRequest would
//! bind it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use podvisor_client::Client;
use podvisor_volumes::{IssuedToken, SourceError, TokenCache, TokenIssuer, TokenSpec};

use crate::error::AuthError;
use crate::issue::issue;
use crate::signer::Signer;

pub struct LocalTokens {
    signer: Arc<Signer>,
    client: Client,
    issued: TokenCache,
}

impl LocalTokens {
    pub fn new(signer: Arc<Signer>, client: Client) -> Self {
        Self {
            signer,
            client,
            issued: TokenCache::new(),
        }
    }

    async fn request(&self, spec: &TokenSpec, now: SystemTime) -> Result<IssuedToken, SourceError> {
        let req = spec.request();
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let at = i64::try_from(secs).unwrap_or(i64::MAX);
        let account = (spec.namespace.as_str(), spec.service_account.as_str());
        let status = issue(&self.signer, &self.client, account, &req, at)
            .await
            .map_err(|e| match e {
                AuthError::Client(podvisor_client::Error::Unavailable(m)) => {
                    SourceError::Unavailable(m)
                }
                other => SourceError::Unsupported(other.to_string()),
            })?;
        let (Some(token), Some(expires)) = (status.token, status.expiration_timestamp) else {
            return Err(SourceError::Unsupported(
                "a token was issued without its expiry".into(),
            ));
        };
        let life = u64::try_from(expires.0.as_second() - at).unwrap_or(0);
        Ok(IssuedToken {
            token,
            issued: now,
            expires: now + Duration::from_secs(life),
        })
    }
}

#[async_trait]
impl TokenIssuer for LocalTokens {
    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError> {
        let now = SystemTime::now();
        if let Some(token) = self.issued.fresh(spec, now) {
            return Ok(token);
        }
        let answer = self.request(spec, now).await;
        self.issued.settle(spec, answer, now)
    }
}
