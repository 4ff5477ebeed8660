//! What a request to a Kubernetes API can answer besides success, as a caller branches on
//! it (kube-apiserver's `metav1.Status` reasons). Every backend maps its failures here, so
//! a consumer retries a `Conflict`, relists on `Gone` and waits out `Unavailable` the same
//! way whichever API it talks to.

use podvisor_core::validation::FieldErrors;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("{resource} {name:?} not found")]
    NotFound { resource: String, name: String },
    #[error("{resource} {name:?} already exists")]
    AlreadyExists { resource: String, name: String },
    /// A stale `resourceVersion`, a failed precondition, or a name taken mid-deletion.
    #[error("Operation cannot be fulfilled on {resource} {name:?}: {reason}")]
    Conflict {
        resource: String,
        name: String,
        reason: String,
    },
    /// A server-side apply would change fields other managers own: the message, and each
    /// conflict's manager and field path.
    #[error("{message}")]
    ApplyConflict {
        resource: String,
        name: String,
        message: String,
        causes: Vec<(String, String)>,
    },
    /// The object breaks a rule: every problem with its field path.
    #[error("{kind} {name:?} is invalid: {errors}")]
    Invalid {
        kind: String,
        name: String,
        errors: FieldErrors,
    },
    /// Refused by an admission check or an authorizer: `cause` is the check's reason
    /// (`TaintToleration`, `OutOfpods`, `PodSecurity`...).
    #[error("{resource} {name:?} is forbidden: {cause}: {message}")]
    Forbidden {
        resource: String,
        name: String,
        cause: String,
        message: String,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("object is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    /// The version a watch or list asked for is older than the server keeps: list again.
    #[error("too old resource version: {0}")]
    Gone(String),
    /// The API could not be reached or cannot answer now (its actor is restarting, the
    /// connection is down): try again later.
    #[error("the API is unavailable: {0}")]
    Unavailable(String),
    /// The server failed (its database, an answer it could not decode).
    #[error("the API failed: {0}")]
    Internal(String),
}

impl Error {
    pub fn not_found(resource: &str, name: &str) -> Self {
        Self::NotFound {
            resource: resource.to_string(),
            name: name.to_string(),
        }
    }

    pub fn conflict(resource: &str, name: &str, reason: impl Into<String>) -> Self {
        Self::Conflict {
            resource: resource.to_string(),
            name: name.to_string(),
            reason: reason.into(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    /// Whether the same request may succeed later without any change.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Internal(_))
    }
}
