//! TokenRequest on a node standing alone: a token for a service account, bound to one of
//! its pods (it dies with the pod), as kube-apiserver's `serviceaccounts/token` issues it.

use k8s_openapi::api::authentication::v1::{TokenRequestSpec, TokenRequestStatus};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_client::{Api, Client};

use crate::claims::{self, Claims, Private, Ref};
use crate::error::AuthError;
use crate::signer::{ISSUER, Signer};

/// When a request names none (the TokenRequest API's default).
pub const DEFAULT_EXPIRATION: i64 = 3600;
/// The shortest and longest lives a token may be asked for (Kubernetes' validation).
pub const MIN_EXPIRATION: i64 = 600;
pub const MAX_EXPIRATION: i64 = 1 << 32;

fn uid_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.uid.clone().unwrap_or_default()
}

fn life(spec: &TokenRequestSpec) -> Result<i64, AuthError> {
    let seconds = spec.expiration_seconds.unwrap_or(DEFAULT_EXPIRATION);
    if seconds < MIN_EXPIRATION {
        return Err(AuthError::Invalid(
            "spec.expirationSeconds: Invalid value: may not specify a duration less than 10 minutes"
                .into(),
        ));
    }
    if seconds > MAX_EXPIRATION {
        return Err(AuthError::Invalid(
            "spec.expirationSeconds: Invalid value: may not specify a duration larger than 2^32 seconds"
                .into(),
        ));
    }
    Ok(seconds)
}

/// The pod the token is to be bound to, checked: it exists, is the same incarnation, and
/// runs as this account.
async fn bound_pod(
    client: &Client,
    namespace: &str,
    account: &str,
    spec: &TokenRequestSpec,
) -> Result<Option<Ref>, AuthError> {
    let Some(r) = &spec.bound_object_ref else {
        return Ok(None);
    };
    if r.kind.as_deref() != Some("Pod") {
        return Err(AuthError::Invalid(format!(
            "spec.boundObjectRef.kind: Unsupported value: {:?}: podvisor binds tokens to pods only",
            r.kind.as_deref().unwrap_or_default()
        )));
    }
    let name = r.name.clone().unwrap_or_default();
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .get_opt(&name)
        .await?
        .ok_or_else(|| AuthError::NotFound {
            kind: "Pod",
            namespace: namespace.into(),
            name: name.clone(),
        })?;
    let uid = uid_of(&pod.metadata);
    if r.uid.as_deref().is_some_and(|u| u != uid) {
        return Err(AuthError::Conflict(format!(
            "the UID in the bound object reference ({}) does not match the UID in record ({uid}): the object might have been deleted and then recreated",
            r.uid.as_deref().unwrap_or_default()
        )));
    }
    if podvisor_core::pod::service_account(pod.spec.as_ref()) != account {
        return Err(AuthError::Invalid(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name"
        )));
    }
    Ok(Some(Ref { name, uid }))
}

/// A signed token for `namespace/account` as `spec` asks, at `now` (seconds since the
/// epoch).
pub async fn issue(
    signer: &Signer,
    client: &Client,
    (namespace, account): (&str, &str),
    spec: &TokenRequestSpec,
    now: i64,
) -> Result<TokenRequestStatus, AuthError> {
    let seconds = life(spec)?;
    let sa = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .get_opt(account)
        .await?
        .ok_or_else(|| AuthError::NotFound {
            kind: "ServiceAccount",
            namespace: namespace.into(),
            name: account.into(),
        })?;
    let pod = bound_pod(client, namespace, account, spec).await?;
    let aud = match spec.audiences.as_deref() {
        Some(asked) if !asked.is_empty() => asked.to_vec(),
        _ => vec![ISSUER.to_string()],
    };
    let claims = Claims {
        iss: ISSUER.into(),
        sub: claims::username(namespace, account),
        aud,
        exp: now + seconds,
        iat: now,
        nbf: now,
        jti: uuid::Uuid::new_v4().to_string(),
        kubernetes: Private {
            namespace: namespace.into(),
            serviceaccount: Ref {
                name: account.into(),
                uid: uid_of(&sa.metadata),
            },
            pod,
            node: None,
        },
    };
    let expires = k8s_openapi::jiff::Timestamp::from_second(claims.exp)
        .map_err(|e| AuthError::Invalid(format!("spec.expirationSeconds: {e}")))?;
    Ok(TokenRequestStatus {
        token: Some(signer.sign(&claims)?),
        expiration_timestamp: Some(Time(expires)),
    })
}
