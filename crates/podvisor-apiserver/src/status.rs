//! Errors as the API reports them: a `metav1.Status` with the HTTP code, the reason
//! kubectl and client libraries switch on, and field causes for invalid objects.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};
use podvisor_client::Error as ClientError;
use podvisor_core::validation::FieldErrors;

/// A refused or failed request.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<StatusDetails>>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(404, "NotFound", format!("the server could not find {what}"))
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_allowed(what: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on {what}"),
        )
    }

    pub fn unsupported_media(t: &str) -> Self {
        let hint = if t.contains("protobuf") {
            " (podvisor reads protobuf only for ConfigMap, Secret, Namespace, ServiceAccount, TokenRequest, RBAC kinds, DeleteOptions and Eviction; send this object as JSON or YAML, e.g. `kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`)"
        } else {
            ""
        };
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({t}) - accepted media types include: application/json, application/yaml, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json{hint}"
            ),
        )
    }

    pub fn unavailable(e: impl std::fmt::Display) -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            format!("the store cannot answer right now: {e}"),
        )
    }

    /// `Kind "name" is invalid: path: detail, ...` with one cause per field.
    pub fn invalid(kind: &str, group: &str, name: &str, errors: &FieldErrors) -> Self {
        let causes = errors
            .0
            .iter()
            .map(|e| StatusCause {
                field: Some(e.field.clone()),
                // kubectl prefixes the field itself.
                message: Some(cause_message(e)),
                reason: Some(e.kind.reason().to_string()),
            })
            .collect();
        let mut err = Self::new(
            422,
            "Invalid",
            format!("{kind} {name:?} is invalid: {errors}"),
        );
        err.details = Some(Box::new(StatusDetails {
            name: Some(name.to_string()),
            group: (!group.is_empty()).then(|| group.to_string()),
            kind: Some(kind.to_string()),
            causes: Some(causes),
            ..StatusDetails::default()
        }));
        err
    }

    pub(crate) fn named(mut self, resource: &str, name: &str) -> Self {
        self.details = Some(Box::new(StatusDetails {
            name: Some(name.to_string()),
            kind: Some(resource.to_string()),
            ..StatusDetails::default()
        }));
        self
    }

    pub fn status(&self) -> Status {
        Status {
            code: Some(self.code.into()),
            details: self.details.as_deref().cloned(),
            message: Some(self.message.clone()),
            reason: Some(self.reason.to_string()),
            status: Some("Failure".to_string()),
            ..Status::default()
        }
    }

    pub fn respond(&self) -> HttpResponse {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        HttpResponse::build(code).json(status_json(&self.status()))
    }
}

fn cause_message(e: &podvisor_core::validation::FieldError) -> String {
    let text = e.to_string();
    match text.strip_prefix(&format!("{}: ", e.field)) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// A Status with its type fields, which k8s-openapi leaves to the caller.
pub fn status_json(s: &Status) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    v["kind"] = "Status".into();
    v["apiVersion"] = "v1".into();
    v["metadata"] = serde_json::json!({});
    v
}

impl From<ClientError> for ApiError {
    fn from(e: ClientError) -> Self {
        let msg = e.to_string();
        match e {
            ClientError::NotFound { resource, name } => {
                ApiError::new(404, "NotFound", msg).named(&resource, &name)
            }
            ClientError::AlreadyExists { resource, name } => {
                ApiError::new(409, "AlreadyExists", msg).named(&resource, &name)
            }
            ClientError::Conflict { resource, name, .. } => {
                ApiError::new(409, "Conflict", msg).named(&resource, &name)
            }
            ClientError::Invalid { kind, name, errors } => {
                let served = podvisor_store::Resource::ALL.iter();
                let group = served
                    .into_iter()
                    .find(|r| r.kind.as_str() == kind)
                    .map_or("", |r| r.group);
                ApiError::invalid(&kind, group, &name, &errors)
            }
            ClientError::ApplyConflict {
                resource,
                name,
                causes,
                ..
            } => {
                let mut e = ApiError::new(409, "Conflict", msg).named(&resource, &name);
                if let Some(d) = e.details.as_mut() {
                    let each = causes.into_iter().map(|(message, field)| StatusCause {
                        reason: Some("FieldManagerConflict".into()),
                        message: Some(message),
                        field: Some(field),
                    });
                    d.causes = Some(each.collect());
                }
                e
            }
            ClientError::Forbidden {
                resource,
                name,
                cause,
                message,
            } => {
                let mut e = ApiError::new(403, "Forbidden", msg).named(&resource, &name);
                if let Some(d) = e.details.as_mut() {
                    d.causes = Some(vec![StatusCause {
                        reason: Some(cause),
                        message: Some(message),
                        field: None,
                    }]);
                }
                e
            }
            ClientError::BadRequest(_) => ApiError::bad_request(msg),
            ClientError::TooLarge { .. } => ApiError::new(413, "RequestEntityTooLarge", msg),
            ClientError::Gone(_) => ApiError::new(410, "Expired", msg),
            ClientError::Unavailable(_) => ApiError::new(503, "ServiceUnavailable", msg),
            ClientError::Internal(_) => ApiError::new(500, "InternalError", msg),
        }
    }
}
