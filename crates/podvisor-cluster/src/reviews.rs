//! The kubelet server's questions to the cluster: who a bearer token belongs to
//! (TokenReview) and whether a client may do what it asks of this node
//! (SubjectAccessReview), as the kubelet's webhook authentication and authorization ask.

use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use podvisor_server::{Attributes, Identity, ReviewError, Reviewer};

use crate::RemoteClient;
use crate::bootstrap::BootstrapError;
use crate::error::from_kube;

/// Reviews through the cluster's API, with the node's own credentials (its role may
/// create both kinds of review).
pub struct ClusterReviews {
    remote: RemoteClient,
}

impl ClusterReviews {
    pub fn new(remote: RemoteClient) -> Self {
        ClusterReviews { remote }
    }
}

fn unavailable(e: kube::Error) -> ReviewError {
    ReviewError::Unavailable(from_kube(e, "review", "").to_string())
}

#[async_trait]
impl Reviewer for ClusterReviews {
    async fn authenticate(&self, token: &str) -> Result<Option<Identity>, ReviewError> {
        let api: Api<TokenReview> = self.remote.api(None);
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(unavailable)?;
        let Some(status) = answer.status.filter(|s| s.authenticated == Some(true)) else {
            return Ok(None);
        };
        let user = status.user.unwrap_or_default();
        Ok(Some(Identity {
            user: user.username.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
        }))
    }

    async fn authorize(
        &self,
        who: &Identity,
        node: &str,
        what: Attributes,
    ) -> Result<bool, ReviewError> {
        let api: Api<SubjectAccessReview> = self.remote.api(None);
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(who.user.clone()),
                groups: Some(who.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(what.verb.to_string()),
                    group: Some(String::new()),
                    version: Some("v1".into()),
                    resource: Some("nodes".into()),
                    subresource: Some(what.subresource.to_string()),
                    name: Some(node.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(unavailable)?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

/// The cluster's CA as PEM, from the kubeconfig the node joined with: what verifies the
/// API server's client certificate on the kubelet server.
pub fn cluster_ca_pem(kubeconfig: &Path) -> Result<String, BootstrapError> {
    let raw = crate::bootstrap::cluster_ca(kubeconfig)?;
    let text = String::from_utf8_lossy(&raw).to_string();
    if text.contains("-----BEGIN") {
        return Ok(text);
    }
    // Inline data is base64 of the PEM.
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap_or_default();
    Ok(String::from_utf8_lossy(&decoded).to_string())
}
