//! The API's name rules: RFC 1123 labels (container, volume and namespace names, host
//! names) and subdomains (object names, node names), with the API server's messages.

use super::field::{FieldError, FieldPath};

pub(crate) const LABEL_MAX: usize = 63;
pub(crate) const SUBDOMAIN_MAX: usize = 253;

const LABEL_RULE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, of any length.
fn label_shaped(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-')
}

fn label_ok(v: &str) -> bool {
    v.len() <= LABEL_MAX && label_shaped(v)
}

/// Why `v` is not an RFC 1123 label, if it is not.
pub fn label(path: &FieldPath, v: &str) -> Option<FieldError> {
    if v.is_empty() {
        return Some(FieldError::required(path, ""));
    }
    if v.len() > LABEL_MAX {
        let detail = format!("must be no more than {LABEL_MAX} characters");
        return Some(FieldError::invalid(path, v, &detail));
    }
    (!label_ok(v)).then(|| FieldError::invalid(path, v, LABEL_RULE))
}

/// Why `v` is not an RFC 1123 subdomain, if it is not.
pub fn subdomain(path: &FieldPath, v: &str) -> Option<FieldError> {
    if v.is_empty() {
        return Some(FieldError::required(path, ""));
    }
    if v.len() > SUBDOMAIN_MAX {
        let detail = format!("must be no more than {SUBDOMAIN_MAX} characters");
        return Some(FieldError::invalid(path, v, &detail));
    }
    // Kubernetes' subdomain pattern bounds the whole name only, not each of its labels:
    // a pod may be named with 253 characters and no dot (its hostname is cut to 63).
    (!v.split('.').all(label_shaped)).then(|| FieldError::invalid(path, v, SUBDOMAIN_RULE))
}

/// A node's name must be what the API accepts for a Node object (it also ends every
/// static pod's name and labels the runtime's pods).
/// A name that only has to be one segment of a path (RBAC's: `system:discovery`): not
/// `.` or `..`, without `/` or `%`.
pub fn path_segment(path: &FieldPath, v: &str) -> Option<FieldError> {
    let bad = match v {
        "." | ".." => Some(format!("may not be '{v}'")),
        _ if v.contains('/') => Some("may not contain '/'".to_string()),
        _ if v.contains('%') => Some("may not contain '%'".to_string()),
        _ if v.len() > 253 => Some("must be no more than 253 characters".to_string()),
        _ => None,
    };
    bad.map(|why| FieldError::invalid(path, v, &why))
}

pub fn node_name(v: &str) -> Result<(), FieldError> {
    subdomain(&FieldPath::new("node_name"), v).map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        let p = FieldPath::new("metadata.name");
        assert!(label(&p, "web-1").is_none());
        for bad in ["Web", "-a", "a-", "a_b", "é"] {
            assert!(label(&p, bad).is_some(), "{bad}");
        }
        assert!(
            label(&p, &"a".repeat(64))
                .unwrap()
                .to_string()
                .contains("no more than 63")
        );
        assert!(subdomain(&p, "a.b-c.d").is_none());
        let e = subdomain(&p, "Web_Server").unwrap();
        assert!(e.to_string().contains("RFC 1123 subdomain"), "{e}");
        assert!(
            subdomain(&p, "")
                .unwrap()
                .to_string()
                .ends_with("Required value")
        );
        assert!(node_name("n1.example").is_ok());
        assert!(node_name("N1").is_err());
        // The conformance suite names pods with more than 63 characters and no dot.
        assert!(subdomain(&p, &"a".repeat(253)).is_none());
        assert!(subdomain(&p, &format!("{}.b", "a".repeat(100))).is_none());
        assert!(subdomain(&p, &"a".repeat(254)).is_some());
        assert!(subdomain(&p, &format!("{}.-b", "a".repeat(10))).is_some());
    }
}
