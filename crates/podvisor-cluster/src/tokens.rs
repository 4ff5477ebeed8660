//! Service-account tokens for the node's pods from the cluster's TokenRequest API, bound to
//! the pod (they die with it), as the kubelet's token manager gets them, kept in a
//! [`TokenCache`] (refreshed past 80 % of their life). While the cluster cannot be
//! reached, a token still valid answers.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use podvisor_volumes::{IssuedToken, SourceError, TokenCache, TokenIssuer, TokenSpec};

use crate::RemoteClient;
use crate::error::{from_kube, source_error};

/// The longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The cluster's TokenRequest API, as the node (the node authorizer lets it ask for the
/// accounts of pods bound to it, bound to those pods).
pub struct ClusterTokens {
    remote: RemoteClient,
    issued: TokenCache,
    /// After the cluster did not answer, no request before this (each would wait out the
    /// timeout): kept tokens answer.
    away_until: Mutex<Option<SystemTime>>,
}

impl ClusterTokens {
    pub fn new(remote: RemoteClient) -> Self {
        Self {
            remote,
            issued: TokenCache::new(),
            away_until: Mutex::new(None),
        }
    }

    fn away(&self, now: SystemTime) -> bool {
        let until = *self.away_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|u| now < u)
    }

    async fn request(&self, spec: &TokenSpec) -> Result<IssuedToken, SourceError> {
        let api: Api<ServiceAccount> = self.remote.api(Some(&spec.namespace));
        let req = TokenRequest {
            spec: Some(spec.request()),
            ..TokenRequest::default()
        };
        let pp = PostParams::default();
        let call = api.create_token_request(&spec.service_account, &pp, &req);
        let answer = match tokio::time::timeout(TIMEOUT, call).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let e = from_kube(e, "ServiceAccount", &spec.service_account);
                return Err(source_error(e));
            }
            Err(_) => {
                return Err(SourceError::Unavailable(format!(
                    "no answer within {TIMEOUT:?}"
                )));
            }
        };
        let status = answer.status.ok_or_else(|| {
            SourceError::Unavailable("the TokenRequest came back without a token".into())
        })?;
        let (Some(token), Some(expires)) = (status.token, status.expiration_timestamp) else {
            return Err(SourceError::Unavailable(
                "the TokenRequest came back without a token or its expiry".into(),
            ));
        };
        Ok(IssuedToken {
            token,
            issued: SystemTime::now(),
            expires: SystemTime::from(expires.0),
        })
    }
}

#[async_trait]
impl TokenIssuer for ClusterTokens {
    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError> {
        let now = SystemTime::now();
        if let Some(token) = self.issued.fresh(spec, now) {
            return Ok(token);
        }
        let answer = if self.away(now) {
            Err(SourceError::Unavailable(
                "the cluster was away moments ago".into(),
            ))
        } else {
            self.request(spec).await
        };
        if let Err(SourceError::Unavailable(_)) = &answer
            && !self.away(now)
        {
            *self.away_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(now + TIMEOUT);
        }
        self.issued.settle(spec, answer, now)
    }
}
