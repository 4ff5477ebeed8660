//! kube-apiserver's answers as podvisor's typed errors: a `Status` by its reason (and code,
//! for servers that leave the reason out); a failure to reach the server is `Unavailable`.

use kube::core::Status;
use podvisor_client::Error;
use podvisor_core::validation::{FieldError, FieldErrorKind, FieldErrors};
use podvisor_volumes::SourceError;

/// Why a client of a cluster could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot use the kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("cannot make a client from the kubeconfig {path}: {source}")]
    Client { path: String, source: kube::Error },
}

/// `e`, met while acting on `name` (of `kind`), as podvisor's error: the one mapping of
/// kube-rs' errors, whichever module made the request.
pub(crate) fn from_kube(e: kube::Error, kind: &str, name: &str) -> Error {
    match e {
        kube::Error::Api(s) => from_status(*s, kind, name),
        kube::Error::SerdeError(e) => Error::Internal(format!("an answer cannot be read: {e}")),
        other => Error::Unavailable(other.to_string()),
    }
}

/// A `Status` the server answered (a failed request, or an ERROR watch event).
pub(crate) fn from_status(s: Status, kind: &str, given: &str) -> Error {
    let (resource, name, causes) = match s.details {
        Some(d) => (d.kind, d.name, d.causes),
        None => (String::new(), String::new(), Vec::new()),
    };
    let resource = if resource.is_empty() {
        kind.to_lowercase()
    } else {
        resource
    };
    let name = if name.is_empty() {
        given.to_string()
    } else {
        name
    };
    match (s.reason.as_str(), s.code) {
        ("NotFound", _) | (_, 404) => Error::NotFound { resource, name },
        ("AlreadyExists", _) => Error::AlreadyExists { resource, name },
        ("Conflict", _) | (_, 409) => Error::Conflict {
            resource,
            name,
            reason: s.message,
        },
        ("Invalid", _) | (_, 422) => Error::Invalid {
            kind: kind.to_string(),
            name,
            errors: FieldErrors(causes.into_iter().map(cause).collect()),
        },
        ("Forbidden" | "Unauthorized", _) | (_, 401 | 403) => Error::Forbidden {
            resource,
            name,
            cause: s.reason,
            message: s.message,
        },
        ("Expired" | "Gone", _) | (_, 410) => Error::Gone(s.message),
        ("BadRequest" | "RequestEntityTooLarge", _) | (_, 400 | 413) => {
            Error::BadRequest(s.message)
        }
        ("ServiceUnavailable" | "Timeout" | "TooManyRequests", _) | (_, 429 | 503 | 504) => {
            Error::Unavailable(s.message)
        }
        _ => Error::Internal(format!("{} ({}): {}", s.reason, s.code, s.message)),
    }
}

/// What a volume source (a token, the Services of a pod's environment) makes of a failed
/// request: refused, or the cluster not answering.
pub(crate) fn source_error(e: Error) -> SourceError {
    match e {
        Error::Forbidden { message, .. } => SourceError::Forbidden(message),
        other => SourceError::Unavailable(other.to_string()),
    }
}

/// One cause of an `Invalid` answer as a field error.
fn cause(c: kube::core::response::StatusCause) -> FieldError {
    let kind = match c.reason.as_str() {
        "FieldValueRequired" => FieldErrorKind::Required,
        "FieldValueDuplicate" => FieldErrorKind::Duplicate,
        "FieldValueNotSupported" => FieldErrorKind::NotSupported,
        "FieldValueNotFound" => FieldErrorKind::NotFound,
        "FieldValueForbidden" => FieldErrorKind::Forbidden,
        "FieldValueTooLong" => FieldErrorKind::TooLong,
        _ => FieldErrorKind::Invalid,
    };
    FieldError {
        kind,
        field: c.field,
        value: None,
        detail: c.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(reason: &str, code: u16) -> Status {
        Status::failure("it failed", reason).with_code(code)
    }

    #[test]
    fn reasons_and_codes_map_to_what_a_caller_branches_on() {
        let e = |r, c| from_status(status(r, c), "Pod", "p");
        assert!(matches!(e("NotFound", 404), Error::NotFound { .. }));
        assert!(matches!(
            e("AlreadyExists", 409),
            Error::AlreadyExists { .. }
        ));
        assert!(matches!(e("Conflict", 409), Error::Conflict { .. }));
        assert!(matches!(e("", 409), Error::Conflict { .. }));
        assert!(matches!(e("Invalid", 422), Error::Invalid { .. }));
        assert!(matches!(e("Forbidden", 403), Error::Forbidden { .. }));
        assert!(matches!(e("Expired", 410), Error::Gone(_)));
        assert!(matches!(
            e("ServiceUnavailable", 503),
            Error::Unavailable(_)
        ));
        assert!(matches!(e("InternalError", 500), Error::Internal(_)));
    }

    #[test]
    fn an_invalid_answer_keeps_every_cause_with_its_field() {
        let mut s = status("Invalid", 422);
        s.details = Some(kube::core::response::StatusDetails {
            name: "p".into(),
            group: String::new(),
            kind: "pods".into(),
            uid: String::new(),
            causes: vec![kube::core::response::StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.containers[0].image".into(),
            }],
            retry_after_seconds: 0,
        });
        let Error::Invalid { errors, .. } = from_status(s, "Pod", "p") else {
            panic!("not Invalid");
        };
        assert_eq!(errors.0.len(), 1);
        assert_eq!(errors.0[0].kind, FieldErrorKind::Required);
        assert_eq!(errors.0[0].field, "spec.containers[0].image");
    }
}
