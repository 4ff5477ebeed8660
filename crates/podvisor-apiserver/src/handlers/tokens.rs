//! `serviceaccounts/{name}/token` (TokenRequest) and `tokenreviews` (TokenReview), on a
//! node that issues its own service-account tokens (standalone). In a cluster the
//! cluster's API answers them; the node's says so.

use actix_web::web::{Bytes, Data};
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview, TokenReviewStatus};
use podvisor_auth::{AuthError, ISSUER};
use serde::de::DeserializeOwned;

use super::ApiState;
use super::body;
use crate::access::{Accounts, now};
use crate::status::ApiError;
use crate::target::Target;

fn accounts(state: &ApiState) -> Result<&Accounts, ApiError> {
    state.accounts.as_ref().ok_or_else(|| {
        ApiError::new(
            403,
            "Forbidden",
            "this node issues no service-account tokens: it is part of a cluster, whose API issues and reviews them",
        )
    })
}

fn decode<T: DeserializeOwned>(req: &HttpRequest, raw: &[u8]) -> Result<T, ApiError> {
    let v = body::parse(&body::content_type(req), raw)?;
    serde_json::from_value(v)
        .map_err(|e| ApiError::bad_request(format!("the body is not a valid object: {e}")))
}

fn refused(e: AuthError, t: &Target) -> ApiError {
    match e {
        AuthError::Client(c) => c.into(),
        AuthError::NotFound { kind, name, .. } => {
            let plural = if kind == "Pod" {
                "pods"
            } else {
                "serviceaccounts"
            };
            ApiError::new(404, "NotFound", format!("{plural} {name:?} not found"))
                .named(plural, &name)
        }
        AuthError::Conflict(m) => ApiError::new(409, "Conflict", m),
        AuthError::Invalid(m) => ApiError::new(
            422,
            "Invalid",
            format!(
                "TokenRequest.authentication.k8s.io {:?} is invalid: {m}",
                t.name.as_deref().unwrap_or_default()
            ),
        ),
        other => ApiError::new(500, "InternalError", other.to_string()),
    }
}

/// POST `.../serviceaccounts/{name}/token`.
pub async fn request(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let accounts = accounts(state)?;
    let mut tr: TokenRequest = decode(req, &raw)?;
    let (Some(ns), Some(name)) = (t.namespace.clone(), t.name.clone()) else {
        return Err(ApiError::not_found(
            "a service account outside a namespace (POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token)",
        ));
    };
    let spec = tr.spec.get_or_insert_with(Default::default);
    if spec.audiences.as_ref().is_none_or(Vec::is_empty) {
        spec.audiences = Some(vec![ISSUER.to_string()]);
    }
    spec.expiration_seconds = Some(
        spec.expiration_seconds
            .unwrap_or(podvisor_auth::DEFAULT_EXPIRATION),
    );
    let status = podvisor_auth::issue(
        &accounts.signer,
        &accounts.client,
        (&ns, &name),
        spec,
        now(),
    )
    .await
    .map_err(|e| refused(e, &t))?;
    tr.metadata.name = Some(name);
    tr.metadata.namespace = Some(ns);
    tr.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(now()).unwrap_or_default(),
    ));
    tr.status = Some(status);
    Ok(HttpResponse::Created().json(tr))
}

/// POST `/apis/authentication.k8s.io/v1/tokenreviews`: who a token is, for the audiences
/// asked (none: the node API's).
pub async fn review(req: HttpRequest, raw: Bytes, state: Data<ApiState>) -> HttpResponse {
    match review_of(&req, &raw, &state).await {
        Ok(r) => HttpResponse::Created().json(r),
        Err(e) => e.respond(),
    }
}

async fn review_of(
    req: &HttpRequest,
    raw: &[u8],
    state: &ApiState,
) -> Result<TokenReview, ApiError> {
    let accounts = accounts(state)?;
    let mut review: TokenReview = decode(req, raw)?;
    let token = review.spec.token.clone();
    let wanted = review.spec.audiences.clone().unwrap_or_default();
    let answer =
        podvisor_auth::authenticate(&accounts.signer, &accounts.client, &token, &wanted, now())
            .await;
    review.status = Some(match answer {
        Ok(who) => TokenReviewStatus {
            authenticated: Some(true),
            user: Some(who.user),
            audiences: Some(who.audiences),
            error: None,
        },
        Err(AuthError::Client(c)) => return Err(c.into()),
        Err(e) => TokenReviewStatus {
            authenticated: Some(false),
            error: Some(e.to_string()),
            ..TokenReviewStatus::default()
        },
    });
    review.spec.token = String::new();
    Ok(review)
}
