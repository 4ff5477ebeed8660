//! Who a bearer token is: a service-account token this node signed, still valid, whose
//! account and bound pod still exist as the same incarnations (a token dies with its pod a
//! minute after the pod's deletion began, as Kubernetes allows).

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use podvisor_client::{Api, Client};

use crate::claims::{self, Claims};
use crate::error::AuthError;
use crate::signer::{ISSUER, Signer};

/// How long a token bound to a pod outlives the start of the pod's deletion.
const DELETION_GRACE_SECONDS: i64 = 60;

/// An authenticated caller, and the audiences the token was accepted for.
#[derive(Debug, Clone, PartialEq)]
pub struct Authenticated {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

fn refused(why: impl Into<String>) -> AuthError {
    AuthError::Unauthenticated(why.into())
}

/// The audiences of the token that the caller accepts (its own, or the node API's).
fn audiences(claims: &Claims, wanted: &[String]) -> Result<Vec<String>, AuthError> {
    let default = [ISSUER.to_string()];
    let wanted = if wanted.is_empty() {
        &default[..]
    } else {
        wanted
    };
    let both: Vec<String> = wanted
        .iter()
        .filter(|a| claims.aud.contains(a))
        .cloned()
        .collect();
    if both.is_empty() {
        return Err(refused(format!(
            "token audiences {:?} is invalid for the target audiences {wanted:?}",
            claims.aud
        )));
    }
    Ok(both)
}

async fn check_account(client: &Client, c: &Claims) -> Result<(), AuthError> {
    let (ns, sa) = (&c.kubernetes.namespace, &c.kubernetes.serviceaccount);
    let found = Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .get_opt(&sa.name)
        .await?;
    match found {
        Some(a) if a.metadata.uid.as_deref() == Some(sa.uid.as_str()) => Ok(()),
        Some(a) => Err(refused(format!(
            "service account UID ({}) does not match claim ({})",
            a.metadata.uid.as_deref().unwrap_or_default(),
            sa.uid
        ))),
        None => Err(refused(format!(
            "service account {ns}/{} has been deleted",
            sa.name
        ))),
    }
}

async fn check_pod(client: &Client, c: &Claims, now: i64) -> Result<(), AuthError> {
    let Some(p) = &c.kubernetes.pod else {
        return Ok(());
    };
    let ns = &c.kubernetes.namespace;
    let pod = Api::<Pod>::namespaced(client.clone(), ns)
        .get_opt(&p.name)
        .await?
        .ok_or_else(|| refused(format!("pod {ns}/{} has been deleted", p.name)))?;
    if pod.metadata.uid.as_deref() != Some(p.uid.as_str()) {
        return Err(refused(format!(
            "pod {ns}/{} is not the one the token is bound to (UID {})",
            p.name, p.uid
        )));
    }
    let deleting = pod.metadata.deletion_timestamp.as_ref();
    if deleting.is_some_and(|t| t.0.as_second() + DELETION_GRACE_SECONDS < now) {
        return Err(refused(format!(
            "pod {ns}/{} is being deleted: the token bound to it is no longer valid",
            p.name
        )));
    }
    Ok(())
}

fn user(c: &Claims) -> UserInfo {
    let ns = &c.kubernetes.namespace;
    let mut extra = BTreeMap::new();
    extra.insert(
        "authentication.kubernetes.io/credential-id".to_string(),
        vec![format!("JTI={}", c.jti)],
    );
    if let Some(p) = &c.kubernetes.pod {
        extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec![p.name.clone()],
        );
        extra.insert(
            "authentication.kubernetes.io/pod-uid".into(),
            vec![p.uid.clone()],
        );
    }
    UserInfo {
        username: Some(claims::username(ns, &c.kubernetes.serviceaccount.name)),
        uid: Some(c.kubernetes.serviceaccount.uid.clone()),
        groups: Some(claims::groups(ns)),
        extra: Some(extra),
    }
}

/// The caller a token names, for `wanted` audiences (none: the node API's), at `now`
/// (seconds since the epoch; the signature's own check uses the clock).
pub async fn authenticate(
    signer: &Signer,
    client: &Client,
    token: &str,
    wanted: &[String],
    now: i64,
) -> Result<Authenticated, AuthError> {
    let claims = signer.verify(token)?;
    let audiences = audiences(&claims, wanted)?;
    check_account(client, &claims).await?;
    check_pod(client, &claims, now).await?;
    Ok(Authenticated {
        user: user(&claims),
        audiences,
    })
}
