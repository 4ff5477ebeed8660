//! Why a token is not issued, not accepted, or a request not allowed.

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The signing key could not be read or made.
    #[error("the service-account signing key {path}: {reason}")]
    Key { path: String, reason: String },
    /// The token is not one this node issued, or no longer valid (the message says which).
    #[error("{0}")]
    Unauthenticated(String),
    /// The request names something that does not exist (the account, the bound pod).
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        kind: &'static str,
        namespace: String,
        name: String,
    },
    /// The request is malformed (an expiration below ten minutes, a bound object of an
    /// unsupported kind).
    #[error("{0}")]
    Invalid(String),
    /// The request names another incarnation of an object than the one there.
    #[error("{0}")]
    Conflict(String),
    /// The store could not answer.
    #[error(transparent)]
    Client(#[from] podvisor_client::Error),
}
