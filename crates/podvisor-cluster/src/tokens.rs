//! Service-account tokens for the node's pods from the cluster's TokenRequest API, bound to
//! the pod (they die with it), as the kubelet's token manager gets them: one per
//! (pod, account, audience, lifetime), kept until 80 % of its life has passed (or a day),
//! then asked again. While the cluster cannot be reached, a token still valid answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use podvisor_volumes::{SourceError, TokenIssuer, TokenSpec};

use crate::RemoteClient;

/// The longest a token is kept before it is asked again, whatever its life.
const MAX_KEEP: Duration = Duration::from_secs(24 * 3600);
/// The longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
struct Issued {
    token: String,
    issued: SystemTime,
    expires: SystemTime,
}

impl Issued {
    /// Past 80 % of its life, or kept a day.
    fn needs_refresh(&self, now: SystemTime) -> bool {
        let life = self.expires.duration_since(self.issued).unwrap_or_default();
        let refresh_at = self.issued + (life * 4 / 5).min(MAX_KEEP);
        now >= refresh_at
    }

    fn valid(&self, now: SystemTime) -> bool {
        now < self.expires
    }
}

/// The cluster's TokenRequest API, as the node (the node authorizer lets it ask for the
/// accounts of pods bound to it, bound to those pods).
pub struct ClusterTokens {
    remote: RemoteClient,
    issued: Mutex<HashMap<TokenSpec, Issued>>,
    /// After the cluster did not answer, no request before this (each would wait out the
    /// timeout): kept tokens answer.
    away_until: Mutex<Option<SystemTime>>,
}

impl ClusterTokens {
    pub fn new(remote: RemoteClient) -> Self {
        Self {
            remote,
            issued: Mutex::new(HashMap::new()),
            away_until: Mutex::new(None),
        }
    }

    fn away(&self, now: SystemTime) -> bool {
        let until = *self.away_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|u| now < u)
    }

    fn kept(&self, spec: &TokenSpec) -> Option<Issued> {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.get(spec).cloned()
    }

    async fn request(&self, spec: &TokenSpec) -> Result<Issued, SourceError> {
        let api: Api<ServiceAccount> = Api::namespaced(self.remote.kube(), &spec.namespace);
        let req = TokenRequest {
            spec: TokenRequestSpec {
                audiences: spec.audience.clone().into_iter().collect(),
                expiration_seconds: Some(spec.expiration_seconds),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: Some(spec.pod_name.clone()),
                    uid: Some(spec.pod_uid.clone()),
                }),
            },
            ..TokenRequest::default()
        };
        let pp = PostParams::default();
        let call = api.create_token_request(&spec.service_account, &pp, &req);
        let answer = match tokio::time::timeout(TIMEOUT, call).await {
            Ok(Ok(a)) => a,
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
                return Err(SourceError::Forbidden(s.message));
            }
            Ok(Err(e)) => return Err(SourceError::Unavailable(e.to_string())),
            Err(_) => {
                return Err(SourceError::Unavailable(format!(
                    "no answer within {TIMEOUT:?}"
                )));
            }
        };
        let status = answer.status.ok_or_else(|| {
            SourceError::Unavailable("the TokenRequest came back without a token".into())
        })?;
        Ok(Issued {
            token: status.token,
            issued: SystemTime::now(),
            expires: SystemTime::from(status.expiration_timestamp.0),
        })
    }
}

#[async_trait]
impl TokenIssuer for ClusterTokens {
    async fn token(&self, spec: &TokenSpec) -> Result<String, SourceError> {
        let now = SystemTime::now();
        let kept = self.kept(spec);
        if let Some(k) = kept.as_ref().filter(|k| !k.needs_refresh(now)) {
            return Ok(k.token.clone());
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
        match answer {
            Ok(fresh) => {
                let token = fresh.token.clone();
                let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
                issued.retain(|_, i| i.valid(now));
                issued.insert(spec.clone(), fresh);
                Ok(token)
            }
            Err(e) => match kept.filter(|k| k.valid(now)) {
                Some(k) => {
                    tracing::warn!(account = %spec.service_account, error = %e, "cannot refresh a service-account token; the current one serves until it expires");
                    Ok(k.token)
                }
                None => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_refreshed_past_four_fifths_of_its_life_or_a_day() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Issued {
            token: "t".into(),
            issued: t0,
            expires: t0 + Duration::from_secs(3600),
        };
        assert!(!hour.needs_refresh(t0 + Duration::from_secs(2879)));
        assert!(hour.needs_refresh(t0 + Duration::from_secs(2880)));
        assert!(hour.valid(t0 + Duration::from_secs(3599)));
        assert!(!hour.valid(t0 + Duration::from_secs(3600)));
        let week = Issued {
            expires: t0 + Duration::from_secs(7 * 24 * 3600),
            ..hour
        };
        assert!(week.needs_refresh(t0 + MAX_KEEP));
        assert!(!week.needs_refresh(t0 + MAX_KEEP - Duration::from_secs(1)));
    }
}
