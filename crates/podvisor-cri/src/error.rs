//! The one error type of the runtime layer. Callers branch on three questions the kubelet
//! logic needs answered: is the runtime there at all, does the object exist, or did the
//! call fail for another reason.

use std::time::Duration;

use crate::endpoint::EndpointError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CriError {
    /// No connection to the runtime (socket missing, refused, or dropped mid-call).
    #[error("cannot reach the container runtime at {endpoint}: {reason}")]
    Unreachable { endpoint: String, reason: String },
    /// The sandbox, container or image named in the call does not exist.
    #[error("{op}: not found: {message}")]
    NotFound { op: &'static str, message: String },
    /// An object with this name (and attempt) exists already: containerd keeps a sandbox
    /// or container name reserved until the object is removed, so a create whose answer was
    /// lost shows up as this on the retry.
    #[error("{op}: already exists: {message}")]
    AlreadyExists { op: &'static str, message: String },
    /// The call did not complete within its deadline (the runtime may still act on it).
    #[error("{op}: no answer within {after:?}")]
    Timeout { op: &'static str, after: Duration },
    /// The runtime does not implement this call (containerd 1.6 and GetContainerEvents).
    #[error("{op}: not implemented by the runtime: {message}")]
    Unimplemented { op: &'static str, message: String },
    /// Any other failure the runtime reported.
    #[error("{op} failed ({code:?}): {message}")]
    Failed {
        op: &'static str,
        code: tonic::Code,
        message: String,
    },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
}

impl CriError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::AlreadyExists { .. })
    }

    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// A generic failure, for code (like the fake runtime) that has no gRPC status at hand.
    pub fn failed(op: &'static str, message: impl Into<String>) -> Self {
        Self::Failed {
            op,
            code: tonic::Code::Unknown,
            message: message.into(),
        }
    }

    pub fn not_found(op: &'static str, message: impl Into<String>) -> Self {
        Self::NotFound {
            op,
            message: message.into(),
        }
    }

    pub(crate) fn from_status(op: &'static str, endpoint: &str, status: tonic::Status) -> Self {
        match status.code() {
            tonic::Code::Unavailable => Self::Unreachable {
                endpoint: endpoint.to_string(),
                reason: root_cause(&status),
            },
            tonic::Code::NotFound => Self::NotFound {
                op,
                message: status.message().to_string(),
            },
            tonic::Code::AlreadyExists => Self::AlreadyExists {
                op,
                message: status.message().to_string(),
            },
            // containerd 1.6 reports a reserved sandbox or container name with code Unknown
            // ("name ... is reserved for ..."), 1.7 with AlreadyExists, 2.x with
            // FailedPrecondition. Either way it is typed here, once, so no caller matches on
            // text.
            tonic::Code::Unknown | tonic::Code::FailedPrecondition
                if status.message().contains(" is reserved for ") =>
            {
                Self::AlreadyExists {
                    op,
                    message: status.message().to_string(),
                }
            }
            tonic::Code::Unimplemented => Self::Unimplemented {
                op,
                message: status.message().to_string(),
            },
            code => Self::Failed {
                op,
                code,
                message: status.message().to_string(),
            },
        }
    }
}

/// The innermost cause of a transport failure ("No such file or directory (os error 2)")
/// says more to an operator than tonic's outer "transport error".
fn root_cause(status: &tonic::Status) -> String {
    let mut err: &dyn std::error::Error = status;
    while let Some(next) = err.source() {
        err = next;
    }
    let inner = err.to_string();
    if inner.is_empty() || std::ptr::addr_eq(err, status as &dyn std::error::Error) {
        status.message().to_string()
    } else {
        inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserved_name_is_already_exists_whichever_way_the_runtime_says_it() {
        let grpc = tonic::Status::already_exists("name \"x\" is reserved");
        assert!(CriError::from_status("RunPodSandbox", "e", grpc).is_already_exists());
        // containerd 1.6's words, with code Unknown.
        let v16 = tonic::Status::unknown(
            "failed to reserve sandbox name \"x_default_u_0\": name \"x_default_u_0\" is reserved for \"abc\"",
        );
        assert!(CriError::from_status("RunPodSandbox", "e", v16).is_already_exists());
        // containerd 2.1's code, with the same words.
        let v21 = tonic::Status::failed_precondition(
            "failed to reserve sandbox name \"x_default_u_0\": name \"x_default_u_0\" is reserved for \"abc\"",
        );
        assert!(CriError::from_status("RunPodSandbox", "e", v21).is_already_exists());
        let other = tonic::Status::unknown("something else broke");
        assert!(!CriError::from_status("RunPodSandbox", "e", other).is_already_exists());
    }
}
