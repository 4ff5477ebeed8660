//! Why the store refused or failed a request. The API maps each to a `metav1.Status`.

use podvisor_core::validation::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{resource} {name:?} not found")]
    NotFound {
        resource: &'static str,
        name: String,
    },
    #[error("{resource} {name:?} already exists")]
    AlreadyExists {
        resource: &'static str,
        name: String,
    },
    /// A stale `resourceVersion`, a failed precondition, or a name taken mid-deletion.
    #[error("Operation cannot be fulfilled on {resource} {name:?}: {reason}")]
    Conflict {
        resource: &'static str,
        name: String,
        reason: String,
    },
    /// The object breaks a rule: every problem with its field path.
    #[error("{kind} {name:?} is invalid: {errors}")]
    Invalid {
        kind: &'static str,
        name: String,
        errors: FieldErrors,
    },
    /// Refused by an admission check: `cause` is the check's reason (`TaintToleration`,
    /// `OutOfpods`...).
    #[error("{resource} {name:?} is forbidden: {cause}: {message}")]
    Forbidden {
        resource: &'static str,
        name: String,
        cause: &'static str,
        message: String,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("object is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    /// The revision a watch or list asked for is older than the change window.
    #[error("too old resource version: {asked} ({oldest})")]
    Gone { asked: u64, oldest: u64 },
    #[error("the database failed: {0}")]
    Db(String),
}

impl StoreError {
    pub(crate) fn db(e: impl std::fmt::Display) -> Self {
        StoreError::Db(e.to_string())
    }
}
