//! The kubelet's token manager's memory: one token per (pod, account, audience, lifetime),
//! kept until 80 % of its life has passed (or a day), then asked again; while a fresh one
//! cannot be had, the current one serves until it expires. Whoever issues the tokens (the
//! cluster's TokenRequest API, the node's own signer) keeps them here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::error::SourceError;
use crate::source::TokenSpec;

/// The longest a token is kept before it is asked again, whatever its life.
pub const MAX_KEEP: Duration = Duration::from_secs(24 * 3600);

/// One token as issued.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub token: String,
    pub issued: SystemTime,
    pub expires: SystemTime,
}

impl IssuedToken {
    /// Past 80 % of its life, or kept a day.
    pub fn needs_refresh(&self, now: SystemTime) -> bool {
        let life = self.expires.duration_since(self.issued).unwrap_or_default();
        let refresh_at = self.issued + (life * 4 / 5).min(MAX_KEEP);
        now >= refresh_at
    }

    pub fn valid(&self, now: SystemTime) -> bool {
        now < self.expires
    }
}

/// The tokens issued so far.
#[derive(Default)]
pub struct TokenCache {
    issued: Mutex<HashMap<TokenSpec, IssuedToken>>,
}

impl TokenCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The kept token for `spec`, if any.
    pub fn kept(&self, spec: &TokenSpec) -> Option<IssuedToken> {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        issued.get(spec).cloned()
    }

    /// The kept token when it needs no refresh yet.
    pub fn fresh(&self, spec: &TokenSpec, now: SystemTime) -> Option<String> {
        self.kept(spec)
            .filter(|k| !k.needs_refresh(now))
            .map(|k| k.token)
    }

    /// What a request came back with: a fresh token is kept (the expired ones go); a
    /// failure is answered by the kept token while it is valid.
    pub fn settle(
        &self,
        spec: &TokenSpec,
        answer: Result<IssuedToken, SourceError>,
        now: SystemTime,
    ) -> Result<String, SourceError> {
        match answer {
            Ok(fresh) => {
                let token = fresh.token.clone();
                let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
                issued.retain(|_, i| i.valid(now));
                issued.insert(spec.clone(), fresh);
                Ok(token)
            }
            Err(e) => match self.kept(spec).filter(|k| k.valid(now)) {
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

    fn spec() -> TokenSpec {
        TokenSpec {
            namespace: "ns".into(),
            service_account: "sa".into(),
            pod_name: "p".into(),
            pod_uid: "u".into(),
            audience: None,
            expiration_seconds: 3600,
        }
    }

    #[test]
    fn a_token_is_refreshed_past_four_fifths_of_its_life_or_a_day() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = IssuedToken {
            token: "t".into(),
            issued: t0,
            expires: t0 + Duration::from_secs(3600),
        };
        assert!(!hour.needs_refresh(t0 + Duration::from_secs(2879)));
        assert!(hour.needs_refresh(t0 + Duration::from_secs(2880)));
        assert!(hour.valid(t0 + Duration::from_secs(3599)));
        assert!(!hour.valid(t0 + Duration::from_secs(3600)));
        let week = IssuedToken {
            expires: t0 + Duration::from_secs(7 * 24 * 3600),
            ..hour
        };
        assert!(week.needs_refresh(t0 + MAX_KEEP));
        assert!(!week.needs_refresh(t0 + MAX_KEEP - Duration::from_secs(1)));
    }

    #[test]
    fn a_failed_refresh_is_answered_by_the_kept_token_until_it_expires() {
        let cache = TokenCache::new();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let issued = IssuedToken {
            token: "first".into(),
            issued: t0,
            expires: t0 + Duration::from_secs(3600),
        };
        assert_eq!(cache.settle(&spec(), Ok(issued), t0).unwrap(), "first");
        assert_eq!(cache.fresh(&spec(), t0).as_deref(), Some("first"));
        let late = t0 + Duration::from_secs(3000);
        assert_eq!(cache.fresh(&spec(), late), None);
        let away = || Err(SourceError::Unavailable("away".into()));
        assert_eq!(cache.settle(&spec(), away(), late).unwrap(), "first");
        let expired = t0 + Duration::from_secs(3600);
        assert!(cache.settle(&spec(), away(), expired).is_err());
    }
}
